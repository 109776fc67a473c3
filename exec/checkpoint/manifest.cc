// SPDX-License-Identifier: Apache-2.0
#include "exec/checkpoint/manifest.h"

#include <climits>

namespace dsp::exec {

int64_t ParamMeta::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool PlainFileName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find_first_of("/\\") == std::string::npos && name.find('\0') == std::string::npos;
}

Status RegularFileWithin(const std::filesystem::path& path, uintmax_t max_bytes, const std::string& what) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::exists(status)) return Error{what + " is missing"};
  if (!std::filesystem::is_regular_file(status)) return Error{what + " is not a regular file (a link, device or directory)"};
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Error{what + ": " + ec.message()};
  if (size > max_bytes) return Error{what + " is " + std::to_string(size) + " bytes, more than a ds-plan run checkpoint holds"};
  return Status::Ok();
}

Result<int64_t> IntField(const Json& j, const char* key, int64_t lo, int64_t hi, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) {
    return Error{where + ": '" + key + "' is missing or not an integer"};
  }
  const int64_t v = j[key].is_number_unsigned() && j[key].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : j[key].get<int64_t>();
  if (v < lo || v > hi) {
    return Error{where + ": '" + key + "' is " + std::to_string(v) + ", outside " + std::to_string(lo) + ".." +
                 std::to_string(hi)};
  }
  return v;
}

Result<PieceRef> ReadPiece(const Json& piece, const std::map<std::string, ParamMeta>& params, size_t blob_bytes,
                           const std::string& where) {
  if (!piece.is_object() || !piece.contains("param") || !piece["param"].is_string()) {
    return Error{where + ": 'param' is missing or not a string"};
  }
  PieceRef r;
  r.param = piece["param"].get<std::string>();
  auto it = params.find(r.param);
  if (it == params.end()) return Error{where + " holds " + r.param + ", which this model does not have"};
  const ParamMeta& param = it->second;
  const std::string at = where + ": " + r.param;
  const Json shard = piece.value("shard", Json());
  auto parts_or = IntField(shard, "parts", 1, kMaxParts, at + " shard");
  if (!parts_or.ok()) return parts_or.error();
  const int64_t parts = *parts_or;
  auto index_or = IntField(shard, "index", 0, parts - 1, at + " shard");
  if (!index_or.ok()) return index_or.error();
  const int64_t rank = static_cast<int64_t>(param.sizes.size());
  auto dim_or = IntField(shard, "dim", -1, rank - 1, at + " shard");
  if (!dim_or.ok()) return dim_or.error();
  const int64_t dim = *dim_or;
  if (dim >= 0 && param.sizes[static_cast<size_t>(dim)] % parts != 0) {
    return Error{at + " shard: " + std::to_string(parts) + " parts do not divide dimension " + std::to_string(dim) +
                 " of size " + std::to_string(param.sizes[static_cast<size_t>(dim)])};
  }
  if (dim < 0 && parts != 1) return Error{at + " shard: a whole tensor (dim -1) in " + std::to_string(parts) + " parts"};
  r.dim = static_cast<int>(dim);
  r.index = *index_or;
  r.parts = parts;
  const int64_t slice = param.numel() / parts;
  // A ZeRO chunk of the flattened slice (padded to a multiple of its group: at most one chunk past it).
  auto numel_or = IntField(piece, "numel", 0, slice, at);
  if (!numel_or.ok()) return numel_or.error();
  const int64_t numel = *numel_or;
  auto offset_or = IntField(piece, "chunk_offset", 0, slice, at);
  if (!offset_or.ok()) return offset_or.error();
  auto byte_offset_or = IntField(piece, "byte_offset", 0, static_cast<int64_t>(blob_bytes), at);
  if (!byte_offset_or.ok()) return byte_offset_or.error();
  const int64_t byte_offset = *byte_offset_or;
  if (numel * param.element_bytes > static_cast<int64_t>(blob_bytes) - byte_offset) {
    return Error{at + ": bytes " + std::to_string(byte_offset) + ".." +
                 std::to_string(byte_offset + numel * param.element_bytes) + " lie past the end of the file (" +
                 std::to_string(blob_bytes) + " bytes)"};
  }
  if (!piece.contains("dtype") || !piece["dtype"].is_string() || piece["dtype"].get<std::string>() != param.dtype) {
    return Error{at + ": 'dtype' is not " + param.dtype};
  }
  r.numel = numel;
  r.chunk_offset = *offset_or;
  r.byte_offset = byte_offset;
  return r;
}

Status CheckManifest(const Json& manifest, const Json& identity, const std::string& where) {
  if (!manifest.is_object() || !manifest.contains("identity") || !manifest["identity"].is_object() ||
      !manifest.contains("files") || !manifest["files"].is_array()) {
    return Error{where + ": manifest.json is not a ds-plan run manifest"};
  }
  if (manifest.value("format", Json()) != Json("ds-plan run checkpoint 1")) {
    return Error{where + ": manifest.json 'format' is not \"ds-plan run checkpoint 1\""};
  }
  for (const auto& [key, want] : identity.items()) {
    const Json& got = manifest["identity"].contains(key) ? manifest["identity"][key] : Json();
    if (got != want) {
      return Error{where + ": the checkpoint was saved by another model or run: " + key + " is " + got.dump() +
                   " there, " + want.dump() + " here"};
    }
  }
  if (auto step = IntField(manifest, "step", 0, kMaxSavedStep, where + ": manifest.json"); !step.ok()) {
    return step.error();
  }
  if (manifest.contains("layout") && !manifest["layout"].is_object()) {
    return Error{where + ": manifest.json 'layout' is not an object"};
  }
  for (const Json& f : manifest["files"]) {
    if (!f.is_string() || !PlainFileName(f.get<std::string>())) {
      return Error{where + ": manifest.json 'files' lists " + f.dump() +
                   ", not a plain file name inside the checkpoint directory"};
    }
  }
  return Status::Ok();
}

}  // namespace dsp::exec
