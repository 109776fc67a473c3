// SPDX-License-Identifier: Apache-2.0
// ZeRO as a graph pass (deepspeed/compile/passes/zero3_compile.py, zero_1_and_2_compile.py):
// stage 3 gathers every partitioned parameter before its first reader and releases it after its
// last; every stage reduces each parameter's gradient over the group ZeRO partitions that
// parameter family over (dense: dp, or sp_dp with Ulysses; routed experts under AutoEP: edp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/graph/symbolic.h"
#include "sim/passes/pass.h"

namespace dsp::sim::passes {

// One parameter family's reduction group.
struct ZeroGroup {
  std::string name;    // "dp", "sp_dp", "edp": the group kind (as `ds-plan groups` names it) the collectives name
  std::string symbol;  // the size symbol partitions are divided by: "DP" -> [N*D*H/DP]
  // 1 = nobody to reduce with: no collective for this family; 0 = unknown (no world size given):
  // assume peers.
  int64_t size = 0;
};

struct ZeroOptions {
  int stage = 0;  // zero_optimization.stage, 0..3
  ZeroGroup dense{"dp", "DP", 0};
  // Routed experts under AutoEP (experts nodes fed by a dispatch); nullopt = no separate group,
  // experts reduce with the dense family.
  std::optional<ZeroGroup> experts;
  // AutoEP+AutoTP folding (auto_ep_folding.py autoep_folding_gradient_reduction_strategy): before the DP reduction, gradients of
  // TP-replicated dense parameters (router, norms, embedding, skipped layers) are AVERAGEd over
  // tp: an `all_reduce` in group "tp". TP-sharded parameters (param_shape mentions tp_symbol)
  // and routed experts (a local /tp, no collective) are left alone. 1 = no folding.
  int64_t fold_tp = 1;
  std::string tp_symbol = "T";
  // stage3_param_persistence_threshold: parameters with fewer elements stay whole on every rank
  // (no gather/release). Needs `values` to count elements; unbound symbols count as large.
  int64_t persistence_threshold = 0;
  // DeepCompile's ZeRO (ZeroSettings::deepcompile): stage 1/2 gradients are all-reduced (z1.cpp,
  // z2.cpp), not reduce-scattered.
  bool deepcompile = false;
  graph::SymbolValues values;
};

// Per distinct parameter (the `param` of the first node reading it):
//   stage 3, unless persistent: `all_gather` (group of its family) named allgather_<param>,
//     right before the first reader, with no operand (it reads the rank's partition, param_shape
//     [numel/DP]) and shape = the parameter as the readers see it; every reader takes it as its
//     last operand; `release(allgather)` after the last reader;
//   every stage: the gradient reduction reduce_grad_<param>, after the first reader (in backward
//     the first reader is the last to add to the gradient), reading that reader: `all_reduce`
//     at stages 0/1 (shape = param_shape), `reduce_scatter` at stages 2/3 (shape [numel/DP]);
//     with folding a tp `all_reduce` (tp_average_grad_<param>) in front of it.
// <param> is the parameter name with dots as underscores. Gradient reductions and releases have
// no forward users; HasSideEffects keeps them through dead-code elimination.
// Nothing to do when every family's group has size 1 and there is no folding. Errors, graph
// untouched: stage outside 0..3; a parameter-reading node without param_shape; a node that
// already takes a gathered parameter (the pass ran twice).
class ZeroPass : public Pass {
 public:
  explicit ZeroPass(ZeroOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "zero"; }
  std::string_view description() const override;
  Result<bool> Run(graph::Graph& graph) override;

 private:
  ZeroOptions options_;
};

}  // namespace dsp::sim::passes
