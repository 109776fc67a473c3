// SPDX-License-Identifier: Apache-2.0
#include "apps/ds-plan/model_input.h"

#include "core/json/document.h"
#include "core/util/file_io.h"

namespace dsp::app {
namespace {

// Reads and parses an input file; a syntax error names the file, line and column.
Result<JsonDocument> LoadJson(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  ParsedJson parsed = ParseJsonLenient(path, std::move(text).value());
  if (!parsed.ok) {
    const Diagnostic& d = parsed.diagnostics.back();
    return Error{path + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.column) + ": " + d.message};
  }
  return std::move(parsed.doc);
}

}  // namespace

Result<ModelSpec> LoadModel(const std::string& path) {
  auto doc = LoadJson(path);
  if (!doc.ok()) return doc.error();
  auto spec = ParseHfConfig(doc->root);
  if (!spec.ok()) return Error{path + ": " + spec.error().message};
  return spec;
}

Result<sim::Cluster> LoadCluster(const std::string& path) {
  auto doc = LoadJson(path);
  if (!doc.ok()) return doc.error();
  auto cluster = sim::ParseCluster(doc->root);
  if (!cluster.ok()) {
    // The message starts with the pointer; add the line so editors can jump to it.
    const std::string& msg = cluster.error().message;
    std::string pointer = msg.substr(0, msg.find(':'));
    SourceLoc loc = doc->LocateValue(pointer == "/" ? "" : pointer);
    return Error{path + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) + ": " + msg};
  }
  return cluster;
}

}  // namespace dsp::app
