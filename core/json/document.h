// SPDX-License-Identifier: Apache-2.0
// A JSON document that remembers where every key and value came from, so that schema and rule
// diagnostics can point at file:line:col.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/diag/diagnostic.h"
#include "core/diag/source.h"

namespace dsp {

using Json = nlohmann::json;

struct JsonDocument {
  SourceText source;
  Json root;
  // JSON pointer -> byte offset where that value starts / where its object key starts.
  std::unordered_map<std::string, size_t> value_offsets;
  std::unordered_map<std::string, size_t> key_offsets;
  // Numbers written with a fraction or exponent that the hjson loader turns into integers (2.0,
  // 1e3): DeepSpeed reading the file sees an int there, json.load (Hugging Face, Accelerate) a float.
  std::unordered_set<std::string> float_literals;

  // Location of the value at `pointer`; falls back to the nearest ancestor that exists, so a
  // missing key is reported at the object that should hold it.
  SourceLoc LocateValue(const std::string& pointer) const;
  // Location of the key naming `pointer` (for unknown/deprecated keys); value location otherwise.
  SourceLoc LocateKey(const std::string& pointer) const;
};

struct ParseOptions {
  // Deeper documents are rejected: every later stage walks the tree recursively, and no real
  // DeepSpeed config comes close.
  int max_depth = 256;
};

struct ParsedJson {
  JsonDocument doc;
  std::vector<Diagnostic> diagnostics;  // json-* findings (comments, trailing commas, duplicates, syntax)
  bool ok = false;                      // false when the text is not JSON even leniently
};

// A parser finding (json-* rules) at a byte offset of `src`; both parsers build theirs with it.
Diagnostic MakeDiag(const SourceText& src, std::string id, Severity sev, size_t offset,
                    std::string message, std::string hint);

// Parses like DeepSpeed's loader (comments and trailing commas accepted, duplicate keys rejected)
// and reports what a strict loader (Hugging Face Trainer, Accelerate, json.load) would reject.
ParsedJson ParseJsonLenient(std::string path, std::string text, const ParseOptions& options = {});

}  // namespace dsp
