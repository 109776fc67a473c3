// SPDX-License-Identifier: Apache-2.0
// Gradients after each backward op: reduction buckets per group as each ZeRO stage fills and
// flushes them, and the optimizer step with the post-step gathers (program_builder.h).
#include "sim/schedule/program_builder.h"

#include <algorithm>
#include <map>

#include "sim/cost/offload_time.h"

namespace dsp::sim::schedule::program_detail {

bool Builder::ReducesDuringBackward() const {
  return in_.zero.stage >= 2 || (in_.zero.stage == 1 && (in_.zero.overlap_comm || in_.zero.deepcompile));
}

bool Builder::ListReduceScatter(CollectiveKind kind) const {
  return in_.zero.stage == 3 && kind == CollectiveKind::kReduceScatter && Zero3ListCollectives(in_) &&
         !in_.zero.quantized_gradients && in_.zero.mics_shard_size <= 0;
}

void Builder::FlushBucket(const std::string& key, GroupKind group, CollectiveKind kind, int stream, int m,
                          std::vector<int> extra_deps) {
  Bucket& b = buckets_[key];
  if (b.elements <= 0) return;
  Task t{.name = std::string(CollectiveKindName(kind)) + " " + std::string(GroupKindName(group)) +
                 " grad bucket " + std::to_string(b.count++),
         .phase = Phase::kBackward, .micro = m, .stream = stream};
  t.collective = true;
  t.kind = kind;
  t.group = group;
  t.bytes = (group == GroupKind::kTp ? bpe_ : wire_.gradient) * b.elements;
  t.deps = b.deps;
  AddDeps(t.deps, extra_deps);
  if (ListReduceScatter(kind)) {
    t.compute_seconds = static_cast<double>(GroupSizeOf(*in_.plan, group)) * in_.cluster->gpu.kernel_overhead_seconds;
  }
  const int64_t gpn = std::max(in_.cluster->gpus_per_node, 1);
  const bool zero3_scatter = in_.zero.stage == 3 && kind == CollectiveKind::kReduceScatter;
  if (zero3_scatter && in_.zero.quantized_gradients && in_.plan->sizes.world > gpn) {
    // qgZ: int4 all-to-all inside the node, then across nodes (all_to_all_quant_reduce).
    const double elements = b.elements;
    Task inter = t;
    t.name = "qgz intra-node all_to_all grad bucket " + std::to_string(b.count - 1);
    t.kind = inter.kind = CollectiveKind::kAllToAll;
    t.block = gpn;
    t.bytes = 0.5 * elements;
    t.compute_seconds = QuantizationKernelSeconds(in_, elements);
    const int first = Add(std::move(t));
    inter.name = "qgz inter-node all_to_all grad bucket " + std::to_string(b.count - 1);
    inter.block = gpn;
    inter.strided = true;
    inter.bytes = 0.5 * elements / static_cast<double>(std::min<int64_t>(gpn, in_.plan->sizes.world));
    inter.deps = {first};
    reductions_.push_back(Add(std::move(inter)));
  } else if (zero3_scatter && in_.zero.mics_shard_size > 0) {
    // MiCS: reduce-scatter in the shard group; at the boundary the shard all-reduced across
    // the replicas (mics.py allreduce_mics_shard_grads).
    t.block = in_.zero.mics_shard_size;
    Task replicas = t;
    const int scatter = Add(std::move(t));
    reductions_.push_back(scatter);
    if (m == micro_steps_ - 1) {
      replicas.name = "all_reduce mics replicas grad bucket " + std::to_string(b.count - 1);
      replicas.kind = CollectiveKind::kAllReduce;
      replicas.strided = true;
      replicas.bytes /= static_cast<double>(in_.zero.mics_shard_size);
      replicas.deps = {scatter};
      reductions_.push_back(Add(std::move(replicas)));
    }
  } else {
    reductions_.push_back(Add(std::move(t)));
  }
  b.elements = 0;
  b.deps.clear();
}

void Builder::GradientReady(const std::string& param, int task, int m) {
  auto it = grads_.find(param);
  if (it == grads_.end()) return;
  const GradPath& path = it->second;
  if (path.tp_hook != nullptr) {
    // dist.all_reduce inside the hook: the compute stream waits for it (auto_tp.py
    // register_replicated_grad_hooks), every micro-step.
    Task t{.name = "all_reduce tp grad_allreduce hook " + path.tp_hook->name, .phase = Phase::kBackward,
           .micro = m, .stream = kComputeStream};
    t.collective = true;
    t.kind = CollectiveKind::kAllReduce;
    t.group = GroupKind::kTp;
    t.bytes = bpe_ * path.elements;
    t.deps = {task};
    Add(std::move(t));
  }
  if (!ReducesIn(m)) return;
  if (path.tp_average != nullptr && m == micro_steps_ - 1) {
    Bucket& b = buckets_["tp_average"];
    b.elements += path.elements;
    b.deps.push_back(task);
  }
  if (path.reduce == nullptr) return;
  std::optional<GroupKind> group = GroupKindFromName(path.reduce->group);
  if (!group) return;
  const CollectiveKind kind =
      path.reduce->op == ops::kReduceScatter ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  const std::string key = path.reduce->group;
  Bucket& b = buckets_[key];
  b.elements += path.elements;
  if (!ReducesDuringBackward()) return;  // reduced after the backward pass
  b.deps.push_back(task);
  // Releases before 0.5.5 reduce-scatter each ZeRO-3 gradient on its own through the list form
  // (comm_plan.h Zero3ListCollectives), not in reduce_bucket_size buckets.
  const bool per_parameter = ListReduceScatter(kind);
  if (b.elements >= in_.zero.reduce_bucket_size || per_parameter) {
    // ZeRO-2 without overlap_comm reduces inside the backward hook, on the compute stream.
    const int stream = in_.zero.overlap_comm || in_.zero.stage == 1 || in_.zero.deepcompile ? ReduceStreamOf(*group)
                                                                                         : kComputeStream;
    FlushBucket(key, *group, kind, stream, m);
  }
  reduce_kind_[key] = {*group, kind};
}

void Builder::FlushOpenBuckets(int m, int last) {
  if (ReducesIn(m)) {
    for (auto& [key, b] : buckets_) {
      if (key == "tp_average") continue;
      auto k = reduce_kind_.find(key);
      std::optional<GroupKind> group = GroupKindFromName(key);
      if (!group) continue;
      const CollectiveKind kind = k != reduce_kind_.end() ? k->second.second
                                  : in_.zero.stage >= 2 ? CollectiveKind::kReduceScatter
                                                        : CollectiveKind::kAllReduce;
      const int stream = in_.zero.overlap_comm || in_.zero.stage <= 1 ? ReduceStreamOf(*group) : kComputeStream;
      if (!ReducesDuringBackward()) {
        // One engine all-reduce pass after backward, in reduce_bucket_size pieces.
        const double total = b.elements;
        b.elements = 0;
        for (double left = total; left > 0; left -= in_.zero.reduce_bucket_size) {
          b.elements = std::min(left, in_.zero.reduce_bucket_size);
          FlushBucket(key, *group, kind, stream, m, {last});
        }
      } else {
        FlushBucket(key, *group, kind, stream, m, {last});
      }
    }
    if (m == micro_steps_ - 1 && buckets_["tp_average"].elements > 0) {
      // AutoEP folding: replicated gradients AVERAGEd over tp at the boundary (auto_ep_folding.py).
      Bucket& b = buckets_["tp_average"];
      const double total = b.elements;
      b.elements = 0;
      for (double left = total; left > 0; left -= in_.zero.reduce_bucket_size) {
        b.elements = std::min(left, in_.zero.reduce_bucket_size);
        FlushBucket("tp_average", GroupKind::kTp, CollectiveKind::kAllReduce, ReduceStreamOf(GroupKind::kTp), m,
                    {last});
      }
    }
  }
}

void Builder::Optimizer() {
  const int m = micro_steps_ - 1;
  std::vector<int> deps = reductions_;
  if (last_backward_ >= 0) deps.push_back(last_backward_);
  Task t{.name = "optimizer step", .phase = Phase::kOptimizer, .micro = m};
  double fwd = 0;
  for (const auto& [layer, s] : layer_seconds_) fwd += s;
  const OffloadTime offload = EstimateOffloadTime(in_, fwd, 2 * fwd);
  if (in_.zero.offload_optimizer) {
    // CPU Adam and the PCIe copies (sim/cost/offload_time.h), on the host while the GPU waits.
    t.name = "optimizer step (CPU offload)";
    t.compute_seconds = offload.total_seconds();
  } else {
    // The fused GPU optimizer streams the rank's partition (the closed form's figure), after
    // DeepCompile's offload_opt_states brought the states back (what its copies left exposed).
    t.compute_seconds = GpuOptimizerStepSeconds(in_) + offload.optimizer_states_copy_seconds;
  }
  t.deps = deps;
  // The gradients the step flattens and casts to fp32 (memory_model.cc).
  t.alloc_at_start = memory_.optimizer_step_transient_bytes;
  t.alloc_at_end = -memory_.optimizer_step_transient_bytes;
  const int opt = Add(std::move(t));
  if (in_.zero.stage == 1 || in_.zero.stage == 2) {
    // Each rank stepped its partition; the updated 16-bit parameters are all-gathered.
    std::map<std::string, double> elements;  // family group -> local parameter elements
    for (const auto& [param, path] : grads_) {
      if (path.reduce != nullptr) elements[path.reduce->group] += path.elements;
    }
    for (const auto& [group_name, total] : elements) {
      std::optional<GroupKind> group = GroupKindFromName(group_name);
      if (!group) continue;
      int count = 0;
      for (double left = total; left > 0; left -= in_.zero.allgather_bucket_size) {
        Task g{.name = "all_gather " + group_name + " params bucket " + std::to_string(count++),
               .phase = Phase::kOptimizer, .micro = m, .stream = StreamOf(*group)};
        g.collective = true;
        g.kind = CollectiveKind::kAllGather;
        g.group = *group;
        g.bytes = bpe_ * std::min(left, in_.zero.allgather_bucket_size);
        g.deps = {opt};
        Add(std::move(g));
      }
    }
  }
}

}  // namespace dsp::sim::schedule::program_detail
