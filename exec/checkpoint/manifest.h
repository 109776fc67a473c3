// SPDX-License-Identifier: Apache-2.0
// What `run --load` checks in a checkpoint before it reads a byte of tensor data: manifest.json
// (format, identity, step, the files it lists) and each file's piece list (every piece inside its
// parameter and inside the file's bytes). Free of LibTorch, so the fuzz target
// fuzz/checkpoint_manifest_fuzzer.cc can drive exactly what checkpoint.cc runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/util/result.h"

namespace dsp::exec {

// What `run` can have written: --steps is at most 1,000 per run and a resumed run adds its steps
// to the loaded one, so ten chained resumes; one piece list per parameter slice and chunk.
inline constexpr int64_t kMaxSavedStep = 10'000;
inline constexpr int64_t kMaxParts = int64_t{1} << 20;
inline constexpr size_t kMaxPieceListBytes = size_t{16} << 20;

// A file name the manifest may list: a plain name inside the checkpoint directory.
bool PlainFileName(const std::string& name);

// `path` is a regular file (not a link, device or FIFO) of at most `max_bytes`.
Status RegularFileWithin(const std::filesystem::path& path, uintmax_t max_bytes, const std::string& what);

// An integer field of `j` within [lo, hi]; the error names `where` and the field.
Result<int64_t> IntField(const Json& j, const char* key, int64_t lo, int64_t hi, const std::string& where);

// The manifest's checks: format, identity (what must match), step, and the list of files (plain
// names inside the directory).
Status CheckManifest(const Json& manifest, const Json& identity, const std::string& where);

// A parameter of the model being loaded, as a piece is checked against it.
struct ParamMeta {
  std::vector<int64_t> sizes;
  int64_t element_bytes = 0;
  std::string dtype;  // c10::toString of its scalar type: "Float", "BFloat16"
  int64_t numel() const;
};

// One validated piece of a file's list: within its parameter and within the file's bytes.
struct PieceRef {
  std::string param;
  int dim = -1;  // the tp split: dimension, slice index and parts (-1: whole tensor)
  int64_t index = 0, parts = 1;
  int64_t chunk_offset = 0, numel = 0, byte_offset = 0;
};
Result<PieceRef> ReadPiece(const Json& piece, const std::map<std::string, ParamMeta>& params, size_t blob_bytes,
                           const std::string& where);

}  // namespace dsp::exec
