// SPDX-License-Identifier: Apache-2.0
#include "exec/checkpoint/run_checkpoint.h"

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <ATen/CPUGeneratorImpl.h>

#include "exec/checkpoint/checkpoint.h"

namespace dsp::exec {
namespace {

GroupKind DenseKind(const Plan& plan) { return plan.sizes.sp > 1 ? GroupKind::kSpDp : GroupKind::kDp; }

std::string Two(int64_t v) {
  char out[16];
  std::snprintf(out, sizeof out, "%02lld", static_cast<long long>(v));
  return out;
}

// DeepSpeed's names (runtime/engine.py _get_ckpt_name, _get_zero_ckpt_name, the expert files of
// _get_expert_ckpt_name; with pipeline stages runtime/pipe/module.py ckpt_layer_path, one file per
// PipelineModule layer), with ".bin": raw tensors, not torch.save pickles. The file this rank
// writes its piece of `p` to, "" when another rank of its group writes that piece.
std::string FileFor(const Plan& plan, int rank, const TinyModel& model, const Param& p) {
  const int64_t tp = PositionInGroup(plan, GroupKind::kTp, rank);
  const int64_t dense = PositionInGroup(plan, DenseKind(plan), rank);
  // At stage 3 every rank writes its chunks, its expert chunks included.
  if (plan.zero_stage == 3) return "zero_pp_rank_" + std::to_string(dense) + "_mp_rank_" + Two(tp) + "_optim_states.bin";
  if (p.expert && plan.sizes.expert_parallel) {
    if (PositionInGroup(plan, GroupKind::kEdp, rank) != 0) return "";
    return "expp_rank_" + std::to_string(PositionInGroup(plan, GroupKind::kEp, rank)) + "_mp_rank_" + Two(tp) +
           "_model_states.bin";
  }
  if (dense != 0) return "";
  if (plan.sizes.pp > 1) {
    // layer_<idx>[-model_<tp>]-model_states: the topology's rank representation names the model
    // axis only when there is one (PipeModelDataParallelTopology; topology.py get_rank_repr).
    return "layer_" + Two(model.PipeLayerOf(p.name)) + (plan.sizes.tp > 1 ? "-model_" + Two(tp) : "") +
           "-model_states.bin";
  }
  return "mp_rank_" + Two(tp) + "_model_states.bin";
}

// Every file `rank` writes, in parameter order: what FileFor gives each parameter of its stage
// (routed experts count as held: every ep rank holds some).
std::vector<std::string> FilesOf(const Plan& plan, int rank, const TinyModel& model) {
  const int64_t stage = PositionInGroup(plan, GroupKind::kPp, rank);
  std::vector<std::string> files;
  for (const Param& p : model.params()) {
    if (plan.sizes.pp > 1 && model.StageOf(p.name) != stage) continue;
    std::string f = FileFor(plan, rank, model, p);
    if (!f.empty() && std::find(files.begin(), files.end(), f) == files.end()) files.push_back(std::move(f));
  }
  return files;
}

Json Identity(const RunOptions& o) {
  const TinyConfig& t = o.tiny;
  return Json{{"model_type", t.model_type}, {"layers", t.layers},   {"hidden", t.hidden},
              {"heads", t.heads},           {"kv_heads", t.kv_heads}, {"head_dim", t.head_dim},
              {"intermediate", t.intermediate}, {"vocab", t.vocab}, {"experts", t.experts},
              {"top_k", t.top_k},           {"expert_intermediate", t.expert_intermediate},
              {"seq_len", t.seq_len},       {"seed", o.seed},       {"dtype", DtypeName(o.dtype)},
              {"lr", o.lr}};
}

// A tp-sharded parameter: the #8168 bug dropped these on save.
bool TpSharded(const Param& p) { return p.shard.dim >= 0 && p.shard.parts > 1; }

}  // namespace

at::Tensor RunBatch(uint64_t seed, int64_t step, int64_t rows, int64_t cols, int64_t vocab) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed * 1000003ull + 7919ull * (step + 1));
  return at::randint(vocab, {rows, cols}, gen, at::kLong);
}

Status SaveRun(const RunOptions& o, int rank, int64_t step, TinyModel& model, const Zero3Partitions* zero3,
               Comm* world) {
  const Plan& plan = o.plan;
  std::error_code ec;
  std::filesystem::create_directories(o.save_dir, ec);
  if (ec) return Error{"--save " + o.save_dir + ": " + ec.message()};
  const bool drop_tp = o.fault == Fault::kSkipTpShardOnSave && PositionInGroup(plan, GroupKind::kTp, rank) != 0;
  std::map<std::string, std::vector<CheckpointPiece>> pieces;
  at::NoGradGuard no_grad;
  if (zero3 != nullptr) {
    for (const Zero3Partitions::Part& part : zero3->parts()) {
      const Param& p = model.params()[part.param];
      if (drop_tp && TpSharded(p)) continue;
      pieces[FileFor(plan, rank, model, p)].push_back(
          {p.name, p.shard, part.comm->rank() * part.chunk.numel(), part.chunk.detach().reshape({-1})});
    }
  } else {
    for (const Param& p : model.params()) {
      if (!p.local.defined() || (drop_tp && TpSharded(p))) continue;
      std::string file = FileFor(plan, rank, model, p);
      if (!file.empty()) pieces[file].push_back({p.name, p.shard, 0, p.local.detach().reshape({-1}).contiguous()});
    }
  }
  // Every file the rank owns is written, even one whose pieces the fault dropped.
  for (const std::string& file : FilesOf(plan, rank, model)) {
    if (Status s = WriteCheckpointFile(o.save_dir, file, pieces[file]); !s.ok()) return s;
  }
  // The manifest goes last: a checkpoint without one is an interrupted save.
  if (Status s = world->Barrier(); !s.ok()) return s;
  if (rank != 0) return Status::Ok();
  Json list = Json::array(), writers = Json::object();
  std::set<std::string> seen;
  for (int r = 0; r < plan.sizes.world; ++r) {
    for (const std::string& f : FilesOf(plan, r, model)) {
      if (!seen.insert(f).second) continue;
      list.push_back(f);
      // Which slice of the layout the file holds: its writer's place in each group.
      writers[f] = {{"rank", r},
                    {"tp", PositionInGroup(plan, GroupKind::kTp, r)},
                    {"dp", PositionInGroup(plan, DenseKind(plan), r)},
                    {"pp", PositionInGroup(plan, GroupKind::kPp, r)},
                    {"ep", PositionInGroup(plan, GroupKind::kEp, r)}};
    }
  }
  Json tables = Json::object();
  for (const auto& [kind, groups] : plan.groups.groups) tables[std::string(GroupKindName(kind))] = groups;
  Json shapes = Json::object();
  for (const Param& p : model.params()) shapes[p.name] = p.ref.sizes().vec();
  Json manifest{{"format", "ds-plan run checkpoint 1"},
                {"identity", Identity(o)},
                {"step", step},
                {"layout",
                 {{"tp", plan.sizes.tp},
                  {"dp", plan.derived.dp},
                  {"sp", plan.sizes.sp},
                  {"pp", plan.sizes.pp},
                  {"ep", plan.sizes.expert_parallel ? plan.sizes.ep : 1},
                  {"zero_stage", plan.zero_stage},
                  {"micro_batch", o.tiny.micro_batch},
                  {"micro_batches", o.micro_batches()},
                  {"groups", tables}}},
                {"parameters", shapes},
                {"files", list},
                {"writers", writers}};
  return WriteCheckpointManifest(o.save_dir, manifest);
}

Result<int64_t> LoadRun(const RunOptions& o, TinyModel& model) {
  auto loaded = LoadCheckpoint(o.load_dir, model, Identity(o), model.dtype());
  if (!loaded.ok()) return loaded.error();
  // The reference never stopped: replay it to the saved step on the batches the saved run drew
  // (its global batch: the saved layout's dp x micro-batch x micro-batches per step).
  const TinyConfig& t = o.tiny;
  const int64_t rows = loaded->layout.value("dp", int64_t{1}) * loaded->layout.value("micro_batch", t.micro_batch) *
                       loaded->layout.value("micro_batches", int64_t{1});
  const int64_t seq = t.seq_len;
  for (int64_t step = 0; step < loaded->step; ++step) {
    at::Tensor data = RunBatch(o.seed, step, rows, seq + 1, t.vocab);
    model.ReferenceLoss(data.narrow(1, 0, seq), data.narrow(1, 1, seq), static_cast<double>(rows * seq)).backward();
    at::NoGradGuard no_grad;
    for (Param& p : model.params()) {
      if (p.ref.grad().defined()) p.ref -= o.lr * p.ref.grad();
      p.ref.mutable_grad() = at::Tensor();
    }
  }
  at::NoGradGuard no_grad;
  for (Param& p : model.params()) {
    const at::Tensor& full = loaded->full.at(p.name);
    const double diff = (full.to(at::kFloat) - p.ref.to(at::kFloat)).abs().max().item<double>();
    const double ref = p.ref.to(at::kFloat).abs().max().item<double>();
    if (diff > o.tolerances.atol + o.tolerances.rtol * ref) {
      return Error{"--load " + o.load_dir + ": " + p.name + " differs from the reference replayed to step " +
                   std::to_string(loaded->step) + " by " + std::to_string(diff) + " (max |reference| " +
                   std::to_string(ref) + "): the checkpoint does not hold this run's weights"};
    }
    if (p.local.defined()) p.local.copy_(p.RefSlice(full));
  }
  return loaded->step;
}

}  // namespace dsp::exec
