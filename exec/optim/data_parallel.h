// SPDX-License-Identifier: Apache-2.0
// Gradient reduction and the SGD step, as DeepSpeed does them for ZeRO stages 0-2
// (DeepSpeed 0.19.6 runtime/engine.py allreduce_gradients), plus the comparison of the reduced gradients and updated weights with
// the unsharded reference.
//
// Parameters are flattened per reduction group (dense: dp, or sp_dp with Ulysses; routed experts:
// edp) into one buffer padded to a multiple of the group size. Stage 0 all-reduces it and updates
// everything; stage 1 all-reduces, updates only this rank's partition and all-gathers the weights;
// stage 2 reduce-scatters (each rank only ever holds its partition of the gradient), updates the
// partition and all-gathers. Every reduction is followed by a division by the dense data-parallel
// size (DeepSpeed's "mean": for experts too, engine.py allreduce_gradients).
#pragma once

#include <map>
#include <vector>

#include "exec/comm/comm.h"
#include "exec/model/tiny_model.h"

namespace dsp::exec {

struct ReduceGroup {
  Comm* comm = nullptr;
  double divisor = 1;
  std::vector<int> params;  // indices into TinyModel::params(), all held by this rank
};

// Max |sharded - reference| and max |reference| per family, over what this rank can compare.
struct FamilyDiff {
  double grad_abs = 0, grad_ref = 0, weight_abs = 0, weight_ref = 0;
};
using FamilyDiffs = std::map<ParamFamily, FamilyDiff>;

// AutoEP + AutoTP folding's reduction over tp before the DP reduction (auto_ep_folding.py
// autoep_folding_gradient_reduction_strategy):
// routed experts EXPERT_TP_CANCEL (grad /= tp), router AVERAGE (all-reduce over tp, / tp), other
// replicated parameters AVERAGE, tp-sharded parameters SKIP. The two flags are injected faults.
struct FoldingReduction {
  Comm* tp = nullptr;  // null: not folded
  bool skip_tp_cancel = false;
  bool sum_router_grads = false;
};

class DataParallelSgd {
 public:
  DataParallelSgd(TinyModel& model, int zero_stage, double lr, std::vector<ReduceGroup> groups,
                  FoldingReduction folding = {});

  // After backward() of both losses: reduces the sharded gradients, compares them with the
  // reference gradients, steps both models, compares the weights, clears the gradients.
  Status Step(FamilyDiffs& diffs);

 private:
  struct Flat {
    ReduceGroup group;
    std::vector<int64_t> offsets;  // of each param in the flat buffer
    int64_t numel = 0, padded = 0;
    at::Tensor master;             // stage 1-2: this rank's partition of the weights
  };
  at::Tensor Gather(const Flat& f, bool reference_grads) const;
  void Scatter(const Flat& f, const at::Tensor& flat);
  void Compare(const Flat& f, const at::Tensor& got, const at::Tensor& want, int64_t lo, FamilyDiffs& diffs) const;

  void ReduceFolded();

  TinyModel& model_;
  FoldingReduction folding_;
  int zero_stage_;
  double lr_;
  std::vector<Flat> flats_;
};

}  // namespace dsp::exec
