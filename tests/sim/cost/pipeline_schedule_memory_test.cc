// SPDX-License-Identifier: Apache-2.0
// The pipeline-schedule facts the memory model reads (sim/cost/pipeline_schedule_memory.h): the
// micro-batches of one call, the chunks per rank and the interleaved round, torch's
// (schedules.py microbatches_per_round = m / max(1, m / p)) or Megatron-LM's (p).
#include "sim/cost/pipeline_schedule_memory.h"

#include <gtest/gtest.h>

#include "core/plan/plan.h"

namespace dsp::sim {
namespace {

SimInput Input(Engine engine, int64_t grad_accum, int64_t per_call, int virtual_stages) {
  SimInput in;
  in.engine.engine = engine;
  in.workload.grad_accum = grad_accum;
  in.engine.pipeline_schedule_micro_batches = per_call;
  in.engine.virtual_stages = virtual_stages;
  return in;
}

TEST(PipelineScheduleMemoryTest, CallsChunksAndRounds) {
  EXPECT_EQ(ScheduleCallMicroBatches(Input(Engine::kFsdp2, 32, 0, 1)), 32);
  EXPECT_EQ(ScheduleCallMicroBatches(Input(Engine::kFsdp2, 32, 8, 1)), 8);
  EXPECT_EQ(InterleavedChunks(Input(Engine::kFsdp2, 8, 0, 4)), 4);
  EXPECT_EQ(InterleavedChunks(Input(Engine::kDeepSpeed, 8, 0, 4)), 1);  // no interleaving
  EXPECT_EQ(InterleavedRound(Input(Engine::kFsdp2, 6, 0, 2), 6, 4), 6);    // one round of 6
  EXPECT_EQ(InterleavedRound(Input(Engine::kFsdp2, 10, 0, 2), 10, 4), 5);  // two rounds of 5
  EXPECT_EQ(InterleavedRound(Input(Engine::kFsdp2, 2, 0, 2), 2, 4), 2);    // fewer than p
  EXPECT_EQ(InterleavedRound(Input(Engine::kMegatronLm, 10, 0, 2), 10, 4), 4);
}

// torch's stages allocate a receive buffer per micro-batch of the call for each activation and each
// gradient they receive (stage.py _prepare_forward_infra / _prepare_backward_infra) and keep them;
// the activations of the micro-batches in flight are the layers' saved inputs, counted apart.
TEST(PipelineScheduleMemoryTest, TorchPipelineReceiveBuffersPerStageAndMicroBatch) {
  Plan plan;
  plan.sizes.pp = 8;
  SimInput in = Input(Engine::kFsdp2, 8, 0, 1);
  in.plan = &plan;
  EXPECT_DOUBLE_EQ(TorchPipelineRecvBytes(in, 0, 1.0, 8), 8);      // the first stage: gradients only
  EXPECT_DOUBLE_EQ(TorchPipelineRecvBytes(in, 3, 1.0, 5), 3 + 8);  // 3 activations not in flight
  EXPECT_DOUBLE_EQ(TorchPipelineRecvBytes(in, 7, 1.0, 1), 7);      // the last: activations only
  // Interleaved over 2 chunks: rank 0 holds stages 0 and 8 of 16, rank 7 stages 7 and 15.
  in.engine.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(TorchPipelineRecvBytes(in, 0, 1.0, 8), 8 + 8);
  EXPECT_DOUBLE_EQ(TorchPipelineRecvBytes(in, 7, 1.0, 2), (6 + 8) + 6);
  // Megatron's and DeepSpeed's schedules are not torch's stages.
  in.engine.engine = Engine::kMegatronLm;
  EXPECT_DOUBLE_EQ(TorchPipelineRecvBytes(in, 3, 1.0, 5), 0);
}

}  // namespace
}  // namespace dsp::sim
