// SPDX-License-Identifier: Apache-2.0
// The program's forward and backward passes: compute tasks, ZeRO-3 gathers at their issue
// points, collectives both ways, recompute and checkpoint copies (program_builder.h).
#include "sim/schedule/program_builder.h"

#include <algorithm>
#include <map>

#include "sim/schedule/op_cost.h"

namespace dsp::sim::schedule::program_detail {

Status Builder::Forward(int m) {
  fwd_.clear();
  offload_task_.clear();
  fwd_by_ordinal_.assign(compute_order_.size(), -1);
  std::map<int, double> gather_elements, largest;  // by first reader's forward ordinal
  GatherElementsByReader(false, gather_elements, largest);
  for (const Node* n : g_) {
    const NodeInfo& info = info_[n];
    std::vector<int> deps;
    for (const Node* a : n->args) AddDeps(deps, fwd_[a]);
    if (IsCompute(*n)) {
      Task t{.name = "fwd " + n->name, .phase = Phase::kForward, .micro = m, .layer = info.layer};
      t.compute_seconds = info.forward_seconds;
      t.deps = deps;
      t.alloc_at_end = info.activation_bytes;
      const bool layer_input = info.layer >= 0 && layer_first_[info.layer] == n;
      // PR #8282's engine holds at most two GPU tensors whose copy is still running
      // (max_fwd_stash_count=2): a layer waits for the copy of the layer two before it.
      if (layer_input && offload_checkpoints_ && in_.checkpointing.async_copy) {
        auto it = offload_task_.find(info.layer - 2);
        if (it != offload_task_.end()) t.deps.push_back(it->second);
      }
      // ZeRO-3: the last reader frees the gathered parameter.
      for (const Node* a : n->args) {
        if (IsParamGather(*a) && Readers(*a).back() == n) t.alloc_at_end -= ParamBytes(*a);
      }
      const int id = Add(std::move(t));
      fwd_[n] = {id};
      fwd_by_ordinal_[static_cast<size_t>(info.fwd_ordinal)] = id;
      if (layer_input && Offloaded(info.layer)) {
        Task c{.name = "offload layer " + std::to_string(info.layer) + " input", .phase = Phase::kForward,
               .micro = m, .layer = info.layer,
               .stream = in_.checkpointing.async_copy ? kDeviceToHostStream : kComputeStream};
        c.host_copy = true;
        c.compute_seconds = info.activation_bytes / pcie_;
        c.deps = {id};
        c.alloc_at_end = -info.activation_bytes;  // the device copy is freed once on the host
        offload_task_[info.layer] = Add(std::move(c));
      }
    } else if (IsParamGather(*n)) {
      auto readers = Readers(*n);
      if (readers.empty()) continue;
      const int reader = info_[readers.front()].fwd_ordinal;
      const int issue = SynchronousFetch() ? reader - 1 : IssueOrdinal(reader, gather_elements, largest);
      Result<int> id = AddCollective(*n, false, m, Phase::kForward,
                                     issue >= 0 ? std::vector<int>{fwd_by_ordinal_[issue]} : deps);
      if (!id.ok()) return id.error();
      if (SynchronousFetch()) program_.tasks[*id].stream = kComputeStream;
      program_.tasks[*id].alloc_at_start = ParamBytes(*n);
      fwd_[n] = {*id};
    } else if (graph::IsCollective(n->op) && !graph::IsGradientReduction(*n)) {
      Result<int> id = AddCollective(*n, false, m, Phase::kForward, deps);
      if (!id.ok()) return id.error();
      fwd_[n] = *id >= 0 ? std::vector<int>{*id} : deps;
    } else {
      fwd_[n] = deps;
    }
  }
  return Status::Ok();
}

Result<int> Builder::AddCollective(const Node& n, bool backward, int m, Phase phase, std::vector<int> deps) {
  std::optional<GroupKind> kind = GroupKindFromName(n.group);
  if (!kind) return Error{"%" + n.name + ": unknown process group '" + n.group + "'"};
  if (!in_.plan->groups.groups.contains(*kind)) {
    return Error{"%" + n.name + ": the plan has no " + std::string(GroupKindName(*kind)) + " groups"};
  }
  auto cost = NodeCollectiveCost(n, backward, values_, bpe_,
                                 static_cast<int>(GroupSizeOf(*in_.plan, *kind)));
  if (!cost.ok()) return cost.error();
  if (!cost->has_value()) return -1;
  Task t{.name = std::string(backward ? "bwd " : "fwd ") + n.name, .phase = phase, .micro = m,
         .layer = info_[&n].layer};
  t.collective = true;
  t.kind = (*cost)->kind;
  t.group = (*cost)->group;
  t.bytes = (*cost)->bytes;
  if (IsParamGather(n)) {
    const double elements = t.bytes / bpe_;
    t.bytes = elements * wire_.param_gather;
    if (in_.zero.stage == 3) {
      if (in_.zero.quantized_weights) t.compute_seconds = QuantizationKernelSeconds(in_, elements);
      // Releases before 0.5.5 gather through torch.distributed's list form: one copy kernel per
      // group member around each call (comm_plan.h Zero3ListCollectives).
      if (Zero3ListCollectives(in_)) {
        t.compute_seconds += static_cast<double>(GroupSizeOf(*in_.plan, *kind)) * in_.cluster->gpu.kernel_overhead_seconds;
      }
      if (in_.zero.mics_shard_size > 0) {
        t.block = in_.zero.mics_shard_size;  // MiCS gathers inside the shard group
      } else if (in_.zero.hpz_partition_size > 1 && (phase == Phase::kBackward || m > 0)) {
        t.block = in_.zero.hpz_partition_size;  // hpZ: the secondary partition, after the first forward
      }
    }
  }
  t.stream = StreamOf(t.group);
  t.deps = std::move(deps);
  // Eager ZeRO-3's hooks: the host's work per fetched module holds the gather stream before the
  // gather goes (cluster host.zero3_fetch_seconds; zero_gather_comm.cc prices it the same way).
  const double fetch_host = in_.cluster->host.zero3_fetch_seconds;
  if (IsParamGather(n) && in_.zero.stage == 3 && !in_.zero.deepcompile && fetch_host > 0) {
    Task h{.name = "host fetch " + n.name, .phase = phase, .micro = m, .layer = t.layer, .stream = t.stream};
    h.compute_seconds = fetch_host * FetchedTensors(n);
    h.deps = std::move(t.deps);
    t.deps = {Add(std::move(h))};
  }
  if (IsAllToAll(n)) {  // send and receive buffers live for the call
    t.alloc_at_start = memory_.all_to_all_bytes;
    t.alloc_at_end = -memory_.all_to_all_bytes;
  }
  return Add(std::move(t));
}

std::vector<int> Builder::RecomputeBefore(const Node* n, const NodeInfo& info, std::vector<int> deps, int m,
                                          std::map<int, int>& recompute_task) {
  const Recompute rc = in_.workload.recompute;
  if (rc == Recompute::kFull && info.layer >= 0 && layer_last_[info.layer] == n) {
    std::vector<int> recompute_deps = deps;
    if (Offloaded(info.layer)) {
      // The input comes back before the layer is recomputed: async, prefetched while the
      // layer above is recomputed; blocking, on the compute stream just before.
      const double bytes = info_[layer_first_[info.layer]].activation_bytes;
      const bool async = in_.checkpointing.async_copy;
      Task c{.name = "reload layer " + std::to_string(info.layer) + " input", .phase = Phase::kBackward,
             .micro = m, .layer = info.layer, .stream = async ? kHostToDeviceStream : kComputeStream};
      c.host_copy = true;
      c.compute_seconds = bytes / pcie_;
      c.alloc_at_start = bytes;
      auto above = recompute_task.find(info.layer + 1);
      c.deps = async && above != recompute_task.end() ? std::vector<int>{above->second} : deps;
      recompute_deps.push_back(Add(std::move(c)));
    }
    Task r{.name = "recompute layer " + std::to_string(info.layer), .phase = Phase::kBackward,
           .micro = m, .layer = info.layer};
    r.compute_seconds = layer_seconds_[info.layer];
    r.deps = recompute_deps;
    r.alloc_at_start = memory_.recompute_working_bytes;
    recompute_task[info.layer] = Add(std::move(r));
    deps = {recompute_task[info.layer]};
  } else if (rc == Recompute::kSelective && n->op == ops::kSdpa) {
    Task r{.name = "recompute " + n->name, .phase = Phase::kBackward, .micro = m, .layer = info.layer};
    r.compute_seconds = info.forward_seconds;
    r.deps = deps;
    deps = {Add(std::move(r))};
  }
  return deps;
}

Status Builder::Backward(int m) {
  bwd_.clear();
  std::vector<int> bwd_by_ordinal(compute_order_.size(), -1);
  std::map<const Node*, int> bwd_gather;
  std::map<int, double> gather_elements, largest;  // by first backward reader's backward ordinal
  GatherElementsByReader(true, gather_elements, largest);
  std::map<int, int> recompute_task;  // layer -> task
  int last = -1;
  for (Node* n = g_.back(); n != nullptr; n = n->prev()) {
    const NodeInfo& info = info_[n];
    std::vector<int> deps;
    bool loss = false;
    for (const Node* u : n->users) {
      if (u->op == ops::kOutput) loss = true;
      if (u->op == ops::kRelease || graph::IsGradientReduction(*u)) continue;
      AddDeps(deps, bwd_[u]);
    }
    if (loss) AddDeps(deps, fwd_[n]);
    if (IsCompute(*n)) {
      deps = RecomputeBefore(n, info, std::move(deps), m, recompute_task);
      // ZeRO-3: gather again before the first backward use, prefetched like forward.
      for (const Node* a : n->args) {
        if (!IsParamGather(*a)) continue;
        auto readers = Readers(*a);
        if (!bwd_gather.contains(a)) {
          const int reader = info_[readers.back()].bwd_ordinal;
          const int issue =
              SynchronousFetch() ? reader - 1 : IssueOrdinal(reader, gather_elements, largest);
          Result<int> id = AddCollective(*a, false, m, Phase::kBackward,
                                         issue >= 0 ? std::vector<int>{bwd_by_ordinal[issue]} : deps);
          if (!id.ok()) return id.error();
          program_.tasks[*id].name = "bwd " + a->name;
          if (SynchronousFetch()) program_.tasks[*id].stream = kComputeStream;
          program_.tasks[*id].alloc_at_start = ParamBytes(*a);
          bwd_gather[a] = *id;
        }
        deps.push_back(bwd_gather[a]);
      }
      Task t{.name = "bwd " + n->name, .phase = Phase::kBackward, .micro = m, .layer = info.layer};
      t.compute_seconds = info.backward_seconds;
      t.deps = deps;
      t.alloc_at_end = -info.activation_bytes;
      if (in_.workload.recompute == Recompute::kFull && info.layer >= 0 && layer_first_[info.layer] == n) {
        t.alloc_at_end -= memory_.recompute_working_bytes;
      }
      for (const Node* a : n->args) {
        if (IsParamGather(*a) && Readers(*a).front() == n) t.alloc_at_end -= ParamBytes(*a);
      }
      const int id = Add(std::move(t));
      bwd_[n] = {id};
      bwd_by_ordinal[static_cast<size_t>(info.bwd_ordinal)] = id;
      last = id;
      // The first forward reader of a parameter is the last to add to its gradient.
      if (!n->param.empty() && first_reader_of(n->param) == n) GradientReady(n->param, id, m);
    } else if (graph::IsCollective(n->op) && !IsParamGather(*n) && !graph::IsGradientReduction(*n)) {
      Result<int> id = AddCollective(*n, true, m, Phase::kBackward, deps);
      if (!id.ok()) return id.error();
      bwd_[n] = *id >= 0 ? std::vector<int>{*id} : deps;
    } else {
      bwd_[n] = deps;
    }
  }
  FlushOpenBuckets(m, last);
  last_backward_ = last;
  return Status::Ok();
}

}  // namespace dsp::sim::schedule::program_detail
