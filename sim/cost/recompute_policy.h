// SPDX-License-Identifier: Apache-2.0
// Which forward operators of a layer its backward runs again, shared by the closed form
// (step_time.cc) and the event schedule (schedule/engine_program.cc) so both price the same work.
#pragma once

#include "sim/cost/flops.h"
#include "sim/cost/workload.h"

namespace dsp::sim {

class RecomputePolicy {
 public:
  // `recomputable`: the operators belong to a checkpointed layer (not the embedding or lm_head).
  // `op_sac`: "selective" is torchtitan's op-level selective activation checkpointing
  // (FrameworkProfile::op_level_sac) rather than Korthikanti et al.'s attention-core recompute.
  RecomputePolicy(Recompute recompute, bool op_sac, bool recomputable)
      : recompute_(recompute), op_sac_(op_sac), recomputable_(recomputable) {}

  // Whether the backward re-runs this operator's forward. Call once per operator of one layer, in
  // forward order (op-level AC counts the layer's matmuls).
  bool Again(const OperatorCost& op);

 private:
  Recompute recompute_;
  bool op_sac_;
  bool recomputable_;
  int matmuls_ = 0;
};

}  // namespace dsp::sim
