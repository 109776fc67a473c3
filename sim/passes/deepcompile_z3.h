// SPDX-License-Identifier: Apache-2.0
// DeepCompile's ZeRO-3 from step WARMUP on (compile/init_z3.py: the default schedule re-applies
// add_z3_gather_release, prefetch.schedule_prefetch and selective_gather.selective_gather once
// the profile is taken). Both passes decide from a run-time profile of memory and gather times;
// ds-plan stands in its own estimate for that profile: the predicted peak memory of a rank for
// every node's peak, and the cluster's all-gather time for the comm predictor. They run after the
// zero pass, on its gathers (all_gather nodes without an operand), and only when a budget is
// given (`visualize graph --cluster`): without one the picture is step 0, gathers where the zero
// pass put them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/graph/symbolic.h"
#include "sim/passes/pass.h"

namespace dsp::sim::passes {

struct DeepCompileBudget {
  double hbm_bytes = 0;          // accelerator.total_memory()
  double peak_bytes = 0;         // the profiled peak with every parameter gathered on demand
  double bytes_per_element = 2;  // of a gathered parameter (bf16 / fp16)
  // Seconds of one all-gather producing `bytes` (the comm predictor, profilers/comm_profile.py
  // create_predictor); required.
  std::function<double(double bytes)> gather_seconds;
  graph::SymbolValues values;  // binds the parameter shapes' symbols
};

// selective_gather.selective_gather: with the headroom 0.9 x HBM - profiled peak (MEM_MARGIN
// 0.1), marks parameters persistent in order of gather time per byte, highest first (with a
// latency-plus-bandwidth predictor: the smallest first; stable in graph order), and stops at the
// first that no longer fits. A persistent parameter's gathers become no-ops: the pass removes
// its all_gather and release, and its readers read it whole. remarks() say how many and how much.
class SelectiveGatherPass : public Pass {
 public:
  explicit SelectiveGatherPass(DeepCompileBudget budget) : budget_(std::move(budget)) {}
  std::string_view name() const override { return "selective_gather"; }
  std::string_view description() const override;
  Result<bool> Run(graph::Graph& graph) override;
  std::vector<std::string> remarks() const override { return remarks_; }

 private:
  DeepCompileBudget budget_;
  std::vector<std::string> remarks_;
};

// prefetch.schedule_prefetch on the forward graph: walking it backwards, gathers are fused while
// max(t(current), t(next)) x 1.2 > t(fused) and the fused size stays under MAX_FUSE_SIZE (1e9
// bytes), and each fused group is launched as early as memory allows: a `prefetch` node
// (prefetch_params_fused) where peak + outstanding prefetched bytes would exceed 0.9 x HBM or the
// outstanding bytes exceed MAX_BUFFERED_SIZE (4e9), else right after the inputs. The gathers stay
// where they were (at run time they wait for the prefetched data). The backward graph's prefetch
// is not drawn.
class PrefetchPass : public Pass {
 public:
  explicit PrefetchPass(DeepCompileBudget budget) : budget_(std::move(budget)) {}
  std::string_view name() const override { return "prefetch"; }
  std::string_view description() const override;
  Result<bool> Run(graph::Graph& graph) override;

 private:
  DeepCompileBudget budget_;
};

}  // namespace dsp::sim::passes
