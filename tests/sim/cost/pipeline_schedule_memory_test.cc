// SPDX-License-Identifier: Apache-2.0
// The pipeline-schedule facts the memory model reads (sim/cost/pipeline_schedule_memory.h): the
// micro-batches of one call, the chunks per rank and the interleaved round, torch's
// (schedules.py microbatches_per_round = m / max(1, m / p)) or Megatron-LM's (p).
#include "sim/cost/pipeline_schedule_memory.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dsp::sim
