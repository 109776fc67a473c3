// SPDX-License-Identifier: Apache-2.0
// The builder behind BuildProgram (program.h), internal to sim/schedule and split by phase:
// program.cc (the graph's analysis, where ZeRO-3 gathers are issued, BuildProgram),
// program_passes.cc (forward, backward, recompute, the collectives of each pass) and
// program_gradients.cc (gradient buckets and their reductions, the optimizer step).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/comm/comm_plan.h"
#include "sim/cost/kernel_time.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/step_time.h"
#include "sim/graph/builder.h"
#include "sim/schedule/program.h"

namespace dsp::sim::schedule::program_detail {

namespace ops = graph::ops;
using graph::Node;

inline bool IsCompute(const Node& n) {
  return n.op != ops::kPlaceholder && n.op != ops::kOutput && n.op != ops::kRelease &&
         !graph::IsCollective(n.op);
}

inline bool IsParamGather(const Node& n) {
  return n.op == ops::kAllGather && !n.param.empty() && n.args.empty();
}

inline bool IsAllToAll(const Node& n) {
  return n.op == ops::kAllToAll || n.op == ops::kDispatch || n.op == ops::kCombine;
}

inline void AddDeps(std::vector<int>& deps, const std::vector<int>& more) {
  for (int d : more) {
    if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
  }
}

// A parameter's gradient path as the ZeRO pass left it in the graph.
struct GradPath {
  const Node* reduce = nullptr;      // reduce_grad_*: op and family group
  const Node* tp_average = nullptr;  // tp_average_grad_* (folding)
  // tp_grad_allreduce_* (AutoTP's grad_allreduce hook): summed over tp every micro-step, in the
  // autograd hook, before accumulation and before the DP reduction.
  const Node* tp_hook = nullptr;
  double elements = 0;
};

// Everything per node the builder needs, computed once.
struct NodeInfo {
  int position = 0;           // in graph order
  int layer = -1;
  int fwd_ordinal = -1;       // among compute nodes, forward order
  int bwd_ordinal = -1;       // among compute nodes, backward order
  double forward_seconds = 0;   // its kernels, priced by sim/cost/kernel_time.h
  double backward_seconds = 0;  // input and weight gradients (FlashAttention: its recomputing backward)
  double activation_bytes = 0;  // saved for backward, freed by its backward
};

class Builder {
 public:
  Builder(const graph::Graph& g, const SimInput& in, const ProgramOptions& o) : g_(g), in_(in), o_(o) {}

  Result<Program> Build();

 private:
  Status BindValues();

  Status Analyse();

  double ParamBytes(const Node& gather);

  // Readers of a ZeRO-3 gather in graph order (its users but the release).
  std::vector<const Node*> Readers(const Node& gather);

  int Add(Task t);

  // The compute ordinal after which a gather for a reader at `ordinal` is issued: DeepSpeed's
  // prefetch fetches ahead while the parameters in flight fit stage3_prefetch_bucket_size and the
  // gathered ones max_live_parameters; without prefetch it waits for the previous module.
  // `elements_by_reader` holds, per reader ordinal, the elements gathered for it.
  // Elements of the largest single tensor a gather fetches: the experts glob is E/EP x 3 separate
  // weights, which DeepSpeed fetches module by module.
  double LargestTensor(const Node& gather) { return ParamBytes(gather) / bpe_ / FetchedTensors(gather); }
  double FetchedTensors(const Node& gather);

  // Releases before 0.6.0 fetch the module about to run with a blocking all-gather
  // (_allgather_param then torch.cuda.synchronize()): no prefetch, on the critical path.
  bool SynchronousFetch() const { return in_.zero.stage == 3 && Zero3SynchronousFetch(in_); }

  // Per reader ordinal (the first forward reader's, or in backward the first backward reader's),
  // the elements gathered for it and the largest single tensor among them.
  void GatherElementsByReader(bool backward, std::map<int, double>& elements, std::map<int, double>& largest);

  int IssueOrdinal(int ordinal, const std::map<int, double>& elements_by_reader,
                   const std::map<int, double>& largest_by_reader);

  Status Forward(int m);

  // A collective task for node `n` in one direction; -1 when it moves nothing that way.
  Result<int> AddCollective(const Node& n, bool backward, int m, Phase phase, std::vector<int> deps);

  struct Bucket {
    double elements = 0;
    std::vector<int> deps;
    int count = 0;
  };

  bool ReducesIn(int m) const { return in_.zero.stage >= 2 || m == micro_steps_ - 1; }
  // ZeRO-0 (engine all-reduce) and ZeRO-1 without overlap_comm reduce after backward; ZeRO-2/3 and
  // ZeRO-1 with overlap_comm as buckets fill during backward.
  // DeepCompile's ZeRO-1 reduces inside the boundary micro-step's backward graph whatever
  // overlap_comm says (reduce_grad after each gradient, z1.cpp).
  bool ReducesDuringBackward() const;

  // ZeRO-3 of releases before 0.5.5: one list-form reduce_scatter per gradient, its n input
  // copies on top (torch.distributed's reduce_scatter over a list).
  bool ListReduceScatter(CollectiveKind kind) const;

  void FlushBucket(const std::string& key, GroupKind group, CollectiveKind kind, int stream, int m,
                   std::vector<int> extra_deps = {});

  void GradientReady(const std::string& param, int task, int m);

  // Recompute before the first backward op of a layer (full) or of attention (selective): the
  // recompute task (after the host reload of an offloaded input) becomes the backward op's
  // dependency. Returns the deps the backward op then waits on.
  std::vector<int> RecomputeBefore(const Node* n, const NodeInfo& info, std::vector<int> deps, int m,
                                   std::map<int, int>& recompute_task);

  // The buckets still open at the end of backward; ZeRO-0/1 without overlap reduce everything now.
  void FlushOpenBuckets(int m, int last);

  Status Backward(int m);

  const Node* first_reader_of(const std::string& param);

  void Optimizer();

  const graph::Graph& g_;
  const SimInput& in_;
  const ProgramOptions& o_;
  Program program_;
  int micro_steps_ = 1;
  double bpe_ = 2;
  WireBytes wire_;
  double pcie_ = 0;
  bool offload_checkpoints_ = false;
  std::map<int, int> offload_task_;  // layer -> its input's copy to the host, this micro-step
  // Whether a layer's checkpointed input goes to the host: all of them, but the last with PR
  // #8282's keep-last.
  bool Offloaded(int layer) const;
  KernelRates rates_;
  ShardShape shard_;
  MemoryReport memory_;
  graph::SymbolValues values_;
  std::unordered_map<const Node*, NodeInfo> info_;
  std::vector<const Node*> compute_order_;
  std::vector<const Node*> gathers_;
  std::map<int, double> layer_seconds_;
  std::map<int, const Node*> layer_first_, layer_last_;
  std::map<std::string, GradPath> grads_;
  std::map<std::string, const Node*> first_reader_;
  std::unordered_map<const Node*, std::vector<int>> fwd_, bwd_;
  std::vector<int> fwd_by_ordinal_;
  std::map<std::string, Bucket> buckets_;
  std::map<std::string, std::pair<GroupKind, CollectiveKind>> reduce_kind_;
  std::vector<int> reductions_;
  int last_backward_ = -1;
};

}  // namespace dsp::sim::schedule::program_detail
