// SPDX-License-Identifier: Apache-2.0
#include "exec/checkpoint/checkpoint.h"

#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/util/file_io.h"

namespace dsp::exec {
namespace {

std::string Bytes(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

std::string SliceName(const CheckpointPiece& p) {
  if (p.shard.dim < 0 || p.shard.parts == 1) return "whole";
  return "tp slice " + std::to_string(p.shard.index) + "/" + std::to_string(p.shard.parts) + " (dim " +
         std::to_string(p.shard.dim) + ")";
}

}  // namespace

Status WriteCheckpointFile(const std::string& dir, const std::string& file, const std::vector<CheckpointPiece>& pieces) {
  std::string blob;
  Json list = Json::array();
  for (const CheckpointPiece& p : pieces) {
    list.push_back({{"param", p.param},
                    {"shard", {{"dim", p.shard.dim}, {"index", p.shard.index}, {"parts", p.shard.parts}}},
                    {"chunk_offset", p.chunk_offset},
                    {"numel", p.data.numel()},
                    {"dtype", std::string(c10::toString(p.data.scalar_type()))},
                    {"byte_offset", static_cast<int64_t>(blob.size())}});
    blob += Bytes(p.data);
  }
  const std::string path = (std::filesystem::path(dir) / file).string();
  if (Status s = WriteFileAtomic(path, blob); !s.ok()) return s;
  return WriteFileAtomic(path + ".json", Json{{"file", file}, {"pieces", list}}.dump(1) + "\n");
}

Status WriteCheckpointManifest(const std::string& dir, const Json& manifest) {
  return WriteFileAtomic((std::filesystem::path(dir) / "manifest.json").string(), manifest.dump(1) + "\n");
}

namespace {

// What `run` can have written: --steps is at most 1,000 per run and a resumed run adds its steps
// to the loaded one, so ten chained resumes; one piece list per parameter slice and chunk.
constexpr int64_t kMaxSavedStep = 10'000;
constexpr int64_t kMaxParts = int64_t{1} << 20;
constexpr size_t kMaxPieceListBytes = size_t{16} << 20;

// A file name the manifest may list: a plain name inside the checkpoint directory.
bool PlainFileName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find_first_of("/\\") == std::string::npos && name.find('\0') == std::string::npos;
}

// `path` is a regular file (not a link, device or FIFO) of at most `max_bytes`.
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

// An integer field of `j` within [lo, hi]; the error names `where` and the field.
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

// One validated piece of a file's list: within its parameter and within the file's bytes.
struct PieceRef {
  std::string param;
  Shard shard;
  int64_t chunk_offset = 0, numel = 0, byte_offset = 0;
};

Result<PieceRef> ReadPiece(const Json& piece, const std::map<std::string, const Param*>& by_name, size_t blob_bytes,
                           const std::string& where) {
  if (!piece.is_object() || !piece.contains("param") || !piece["param"].is_string()) {
    return Error{where + ": 'param' is missing or not a string"};
  }
  PieceRef r;
  r.param = piece["param"].get<std::string>();
  auto it = by_name.find(r.param);
  if (it == by_name.end()) return Error{where + " holds " + r.param + ", which this model does not have"};
  const Param& param = *it->second;
  const std::string at = where + ": " + r.param;
  const Json shard = piece.value("shard", Json());
  auto parts_or = IntField(shard, "parts", 1, kMaxParts, at + " shard");
  if (!parts_or.ok()) return parts_or.error();
  const int64_t parts = *parts_or;
  auto index_or = IntField(shard, "index", 0, parts - 1, at + " shard");
  if (!index_or.ok()) return index_or.error();
  const int64_t index = *index_or;
  auto dim_or = IntField(shard, "dim", -1, param.ref.dim() - 1, at + " shard");
  if (!dim_or.ok()) return dim_or.error();
  const int64_t dim = *dim_or;
  if (dim >= 0 && param.ref.size(dim) % parts != 0) {
    return Error{at + " shard: " + std::to_string(parts) + " parts do not divide dimension " + std::to_string(dim) +
                 " of size " + std::to_string(param.ref.size(dim))};
  }
  if (dim < 0 && parts != 1) return Error{at + " shard: a whole tensor (dim -1) in " + std::to_string(parts) + " parts"};
  r.shard = Shard{static_cast<int>(dim), index, parts};
  const int64_t slice = param.ref.numel() / parts;
  // A ZeRO chunk of the flattened slice (padded to a multiple of its group: at most one chunk past it).
  auto numel_or = IntField(piece, "numel", 0, slice, at);
  if (!numel_or.ok()) return numel_or.error();
  const int64_t numel = *numel_or;
  auto offset_or = IntField(piece, "chunk_offset", 0, slice, at);
  if (!offset_or.ok()) return offset_or.error();
  const int64_t offset = *offset_or;
  const int64_t element = static_cast<int64_t>(c10::elementSize(param.ref.scalar_type()));
  auto byte_offset_or = IntField(piece, "byte_offset", 0, static_cast<int64_t>(blob_bytes), at);
  if (!byte_offset_or.ok()) return byte_offset_or.error();
  const int64_t byte_offset = *byte_offset_or;
  if (numel * element > static_cast<int64_t>(blob_bytes) - byte_offset) {
    return Error{at + ": bytes " + std::to_string(byte_offset) + ".." + std::to_string(byte_offset + numel * element) +
                 " lie past the end of the file (" + std::to_string(blob_bytes) + " bytes)"};
  }
  if (!piece.contains("dtype") || !piece["dtype"].is_string() ||
      piece["dtype"].get<std::string>() != std::string(c10::toString(param.ref.scalar_type()))) {
    return Error{at + ": 'dtype' is not " + std::string(c10::toString(param.ref.scalar_type()))};
  }
  r.numel = numel;
  r.chunk_offset = offset;
  r.byte_offset = byte_offset;
  return r;
}

// The manifest's checks before anything is read by its lead: format, identity (what must match),
// step, and the list of files (plain names of regular files inside the directory).
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

}  // namespace

Result<LoadedCheckpoint> LoadCheckpoint(const std::string& dir, TinyModel& model, const Json& identity,
                                        at::ScalarType dtype) {
  const std::filesystem::path root(dir);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(root / "manifest.json", ec))) {
    if (Status m = RegularFileWithin(root / "manifest.json", kMaxPieceListBytes, "--load " + dir + ": manifest.json");
        !m.ok()) {
      return m.error();
    }
  }
  auto text = ReadFile((root / "manifest.json").string(), kMaxPieceListBytes);
  if (!text.ok()) {
    return Error{"--load " + dir + ": no manifest.json (not a ds-plan run checkpoint, or its save did not finish)"};
  }
  const Json manifest = Json::parse(*text, nullptr, false);
  if (Status m = CheckManifest(manifest, identity, "--load " + dir); !m.ok()) return m.error();
  LoadedCheckpoint out;
  out.step = manifest["step"].get<int64_t>();
  out.layout = manifest.value("layout", Json::object());
  // Every parameter's tp slices, each a flat buffer filled chunk by chunk, with what was filled.
  struct Slice {
    at::Tensor flat;
    std::vector<std::pair<int64_t, int64_t>> filled;  // [begin, end)
    std::string file;
  };
  std::map<std::string, std::map<int64_t, Slice>> slices;
  std::map<std::string, int64_t> parts_of;
  std::map<std::string, int> dim_of;
  std::map<std::string, const Param*> by_name;
  for (const Param& p : model.params()) by_name[p.name] = &p;
  for (const Json& f : manifest["files"]) {
    const std::string file = f.get<std::string>();
    const std::string where = "--load " + dir + ": " + file;
    if (Status st = RegularFileWithin(root / (file + ".json"), kMaxPieceListBytes, where + ".json"); !st.ok()) {
      return st.error();
    }
    if (Status st = RegularFileWithin(root / file, uintmax_t{1} << 31, where); !st.ok()) return st.error();
    auto list_text = ReadFile((root / (file + ".json")).string(), kMaxPieceListBytes);
    auto blob = ReadFile((root / file).string(), size_t{1} << 31);
    if (!list_text.ok() || !blob.ok()) return Error{where + " is missing"};
    const Json list = Json::parse(*list_text, nullptr, false);
    if (list.is_discarded() || !list.is_object() || !list.contains("pieces") || !list["pieces"].is_array()) {
      return Error{where + ".json is not a piece list"};
    }
    for (const Json& piece : list["pieces"]) {
      auto ref = ReadPiece(piece, by_name, blob->size(), where);
      if (!ref.ok()) return ref.error();
      const std::string& name = ref->param;
      const Param& param = *by_name.at(name);
      if (parts_of.contains(name) && (parts_of[name] != ref->shard.parts || dim_of[name] != ref->shard.dim)) {
        return Error{where + ": " + name + " is split into " + std::to_string(ref->shard.parts) +
                     " parts here and " + std::to_string(parts_of[name]) + " in another piece"};
      }
      parts_of[name] = ref->shard.parts;
      dim_of[name] = ref->shard.dim;
      const int64_t numel = ref->numel, offset = ref->chunk_offset;
      Slice& s = slices[name][ref->shard.index];
      if (!s.flat.defined()) {
        const int64_t slice_numel = param.ref.numel() / ref->shard.parts;
        s.flat = at::zeros({slice_numel + numel + offset}, param.ref.options().requires_grad(false));
        s.file = file;
      }
      if (s.flat.numel() < offset + numel) {
        at::Tensor bigger = at::zeros({offset + numel}, s.flat.options());
        bigger.narrow(0, 0, s.flat.numel()).copy_(s.flat);
        s.flat = bigger;
      }
      at::Tensor data = at::empty({numel}, param.ref.options().requires_grad(false));
      std::memcpy(data.data_ptr(), blob->data() + ref->byte_offset,
                  static_cast<size_t>(numel) * c10::elementSize(param.ref.scalar_type()));
      s.flat.narrow(0, offset, numel).copy_(data);
      s.filled.emplace_back(offset, offset + numel);
    }
  }
  for (const Param& p : model.params()) {
    auto it = slices.find(p.name);
    if (it == slices.end()) return Error{"--load " + dir + ": no file holds " + p.name};
    const int64_t parts = parts_of[p.name];
    const int dim = dim_of[p.name];
    at::Tensor full = at::empty(p.ref.sizes(), p.ref.options().requires_grad(false));
    for (int64_t index = 0; index < parts; ++index) {
      auto s = it->second.find(index);
      CheckpointPiece which{p.name, Shard{dim, index, parts}, 0, at::Tensor()};
      if (s == it->second.end()) {
        return Error{"--load " + dir + ": " + p.name + ": " + SliceName(which) +
                     " is in no file: the checkpoint lacks that tensor-parallel shard (was it saved "
                     "with the tp shards dropped, as before DeepSpeed PR #8168?)"};
      }
      const int64_t slice_numel = p.ref.numel() / parts;
      auto filled = s->second.filled;
      std::sort(filled.begin(), filled.end());
      int64_t covered = 0;
      for (const auto& [a, b] : filled) {
        if (a > covered) break;
        covered = std::max(covered, b);
      }
      if (covered < slice_numel) {
        return Error{"--load " + dir + ": " + p.name + ": " + SliceName(which) + " has elements " +
                     std::to_string(covered) + "-" + std::to_string(slice_numel - 1) +
                     " in no file: a ZeRO partition is missing"};
      }
      at::Tensor slice_flat = s->second.flat.narrow(0, 0, slice_numel);
      if (dim < 0 || parts == 1) {
        full.copy_(slice_flat.view(p.ref.sizes()));
      } else {
        const int64_t len = p.ref.size(dim) / parts;
        at::Tensor view = full.narrow(dim, index * len, len);
        view.copy_(slice_flat.view(view.sizes()));
      }
    }
    out.full[p.name] = full.to(dtype);
  }
  return out;
}

}  // namespace dsp::exec
