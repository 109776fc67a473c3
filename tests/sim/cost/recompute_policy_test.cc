// SPDX-License-Identifier: Apache-2.0
// How many times a layer's backward re-runs each forward operator: recompute's policy, plus one
// for DeepSpeed's TiledMLP ("forward occurs twice each iteration, and thrice with activation
// checkpointing": deepspeed/runtime/sequence_parallel/ulysses_sp.py TiledMLP).
#include "sim/cost/recompute_policy.h"

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

OperatorCost Op(const char* name, bool tiled) {
  OperatorCost op;
  op.name = name;
  op.tiled = tiled;
  return op;
}

TEST(RecomputePolicyTest, TiledMlpRunsItsForwardOnceMore) {
  RecomputePolicy none(Recompute::kNone, false, true);
  EXPECT_EQ(none.Reruns(Op("q_proj", false)), 0);
  EXPECT_EQ(none.Reruns(Op("mlp_up", true)), 1);
  RecomputePolicy full(Recompute::kFull, false, true);
  EXPECT_EQ(full.Reruns(Op("q_proj", false)), 1);
  EXPECT_EQ(full.Reruns(Op("mlp_up", true)), 2);
  // The embedding and lm_head are not checkpointed.
  RecomputePolicy head(Recompute::kFull, false, false);
  EXPECT_EQ(head.Reruns(Op("lm_head", false)), 0);
}

}  // namespace
}  // namespace dsp::sim
