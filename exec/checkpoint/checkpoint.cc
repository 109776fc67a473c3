// SPDX-License-Identifier: Apache-2.0
#include "exec/checkpoint/checkpoint.h"

#include <algorithm>

#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/util/file_io.h"
#include "exec/checkpoint/manifest.h"

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
  std::map<std::string, ParamMeta> metas;
  for (const Param& p : model.params()) {
    by_name[p.name] = &p;
    metas[p.name] = ParamMeta{p.ref.sizes().vec(), static_cast<int64_t>(c10::elementSize(p.ref.scalar_type())),
                              std::string(c10::toString(p.ref.scalar_type()))};
  }
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
      auto ref = ReadPiece(piece, metas, blob->size(), where);
      if (!ref.ok()) return ref.error();
      const std::string& name = ref->param;
      const Param& param = *by_name.at(name);
      if (parts_of.contains(name) && (parts_of[name] != ref->parts || dim_of[name] != ref->dim)) {
        return Error{where + ": " + name + " is split into " + std::to_string(ref->parts) +
                     " parts here and " + std::to_string(parts_of[name]) + " in another piece"};
      }
      parts_of[name] = ref->parts;
      dim_of[name] = ref->dim;
      const int64_t numel = ref->numel, offset = ref->chunk_offset;
      Slice& s = slices[name][ref->index];
      if (!s.flat.defined()) {
        const int64_t slice_numel = param.ref.numel() / ref->parts;
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
