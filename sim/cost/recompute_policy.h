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

  // How many more times the backward runs this operator's forward: recompute's once (or not),
  // and once more for a TiledMLP operator ("forward occurs twice each iteration, and thrice with
  // activation checkpointing": deepspeed/runtime/sequence_parallel/ulysses_sp.py TiledMLP). Call
  // once per operator of one layer, in forward order (op-level AC counts the layer's matmuls).
  int Reruns(const OperatorCost& op) { return (Again(op) ? 1 : 0) + (op.tiled ? 1 : 0); }

 private:
  bool Again(const OperatorCost& op);

  Recompute recompute_;
  bool op_sac_;
  bool recomputable_;
  int matmuls_ = 0;
};

}  // namespace dsp::sim
