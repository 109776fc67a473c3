// SPDX-License-Identifier: Apache-2.0
// TrainSchedule as DeepSpeed 0.19.6 yields it (deepspeed/runtime/pipe/schedule.py
// TrainSchedule.steps, _step_to_micro_batch, num_pipe_buffers).
#include "core/plan/pipe_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

namespace dsp {
namespace {

// One step as DeepSpeed's instructions print: "RecvGrad(0) SendActivation(1) BackwardPass(0)".
std::vector<std::string> Render(int64_t micro_batches, int64_t stages, int64_t stage) {
  std::vector<std::string> out;
  for (const auto& cmds : TrainSchedule(micro_batches, stages, stage)) {
    std::string line;
    for (const PipeInstruction& c : cmds) {
      if (!line.empty()) line += ' ';
      line += std::string(PipeOpName(c.op)) + "(" + (c.buffer >= 0 ? std::to_string(c.buffer) : "") + ")";
    }
    out.push_back(line);
  }
  return out;
}

std::pair<int64_t, int64_t> Key(int64_t stage, int64_t micro) { return {stage, micro}; }

// Expected streams: printed by running schedule.py's TrainSchedule itself (DeepSpeed 0.19.6) for
// these sizes, with each instruction's buffer_id.
TEST(PipeScheduleTest, TwoStagesThreeMicroBatchesAsDeepSpeedYieldsThem) {
  EXPECT_EQ(Render(3, 2, 0), (std::vector<std::string>{
                                 "LoadMicroBatch(0) ForwardPass(0)",
                                 "SendActivation(0)",
                                 "LoadMicroBatch(1) ForwardPass(1)",
                                 "RecvGrad(0) SendActivation(1) BackwardPass(0)",
                                 "LoadMicroBatch(0) ForwardPass(0)",
                                 "RecvGrad(1) SendActivation(0) BackwardPass(1)",
                                 "",
                                 "RecvGrad(0) BackwardPass(0) ReduceTiedGrads() ReduceGrads() OptimizerStep()",
                             }));
  EXPECT_EQ(Render(3, 2, 1), (std::vector<std::string>{
                                 "",
                                 "RecvActivation(0) LoadMicroBatch(0) ForwardPass(0)",
                                 "BackwardPass(0)",
                                 "SendGrad(0) RecvActivation(1) LoadMicroBatch(1) ForwardPass(1)",
                                 "BackwardPass(1)",
                                 "SendGrad(1) RecvActivation(0) LoadMicroBatch(0) ForwardPass(0)",
                                 "BackwardPass(0)",
                                 "SendGrad(0) ReduceTiedGrads() ReduceGrads() OptimizerStep()",
                             }));
}

TEST(PipeScheduleTest, AMiddleStageOfFourLoadsNothing) {
  EXPECT_EQ(Render(2, 4, 1), (std::vector<std::string>{
                                 "",
                                 "RecvActivation(0) ForwardPass(0)",
                                 "SendActivation(0)",
                                 "RecvActivation(1) ForwardPass(1)",
                                 "SendActivation(1)",
                                 "",
                                 "RecvGrad(0) BackwardPass(0)",
                                 "SendGrad(0)",
                                 "RecvGrad(1) BackwardPass(1)",
                                 "SendGrad(1) ReduceTiedGrads() ReduceGrads() OptimizerStep()",
                             }));
  EXPECT_EQ(TrainScheduleBuffers(2, 4, 1), 2);
  EXPECT_EQ(TrainScheduleBuffers(8, 4, 0), 4);
  EXPECT_EQ(TrainScheduleBuffers(8, 4, 3), 2);
}

// What lets `ds-plan run` execute the stream with blocking transfers: in every step, what stage s
// sends to or receives from s+1 is exactly what s+1 receives from or sends to s, in the same
// order; every micro-batch runs forward once and backward once on each stage, backward after the
// gradient arrived; no stage holds more forward passes than its buffers.
TEST(PipeScheduleTest, EveryStepPairsNeighboursInOrderForManySizes) {
  for (int64_t stages = 1; stages <= 6; ++stages) {
    for (int64_t micro = 1; micro <= 7; ++micro) {
      SCOPED_TRACE("stages " + std::to_string(stages) + ", micro-batches " + std::to_string(micro));
      std::vector<std::vector<std::vector<PipeInstruction>>> all;
      for (int64_t s = 0; s < stages; ++s) all.push_back(TrainSchedule(micro, stages, s));
      const size_t steps = all[0].size();
      ASSERT_EQ(steps, static_cast<size_t>(2 * (micro + stages - 1)));
      std::map<std::pair<int64_t, int64_t>, size_t> forward_at, backward_at, act_arrived, grad_arrived;
      for (int64_t s = 0; s < stages; ++s) {
        ASSERT_EQ(all[s].size(), steps);
        int64_t in_flight = 0, peak = 0;
        for (size_t t = 0; t < steps; ++t) {
          for (const PipeInstruction& c : all[s][t]) {
            if (c.op == PipeOp::kForwardPass) {
              EXPECT_FALSE(forward_at.count(Key(s, c.micro_batch)));
              forward_at[Key(s, c.micro_batch)] = t;
              peak = std::max(peak, ++in_flight);
            }
            if (c.op == PipeOp::kBackwardPass) {
              EXPECT_FALSE(backward_at.count(Key(s, c.micro_batch)));
              backward_at[Key(s, c.micro_batch)] = t;
              --in_flight;
            }
            if (c.op == PipeOp::kRecvActivation) act_arrived[Key(s, c.micro_batch)] = t;
            if (c.op == PipeOp::kRecvGrad) grad_arrived[Key(s, c.micro_batch)] = t;
          }
        }
        EXPECT_LE(peak, TrainScheduleBuffers(micro, stages, s));
        EXPECT_EQ(peak, TrainScheduleInFlight(micro, stages, s)) << "stage " << s;
        EXPECT_EQ(all[s][steps - 1].back().op, PipeOp::kOptimizerStep);
      }
      for (int64_t s = 0; s < stages; ++s) {
        for (int64_t m = 0; m < micro; ++m) {
          ASSERT_TRUE(forward_at.count(Key(s, m)) && backward_at.count(Key(s, m)));
          EXPECT_LT(forward_at[Key(s, m)], backward_at[Key(s, m)]);
          if (s > 0) {
            ASSERT_TRUE(act_arrived.count(Key(s, m)));
            EXPECT_GT(act_arrived[Key(s, m)], forward_at[Key(s - 1, m)]);
            EXPECT_LE(act_arrived[Key(s, m)], forward_at[Key(s, m)]);
          }
          if (s + 1 < stages) {
            ASSERT_TRUE(grad_arrived.count(Key(s, m)));
            EXPECT_GT(grad_arrived[Key(s, m)], backward_at[Key(s + 1, m)]);
            EXPECT_LE(grad_arrived[Key(s, m)], backward_at[Key(s, m)]);
          }
        }
      }
      for (size_t t = 0; t < steps; ++t) {
        for (int64_t s = 0; s + 1 < stages; ++s) {
          // Transfers of s with s+1, as "A0" (activation of micro-batch 0) / "G0", in issue order.
          std::vector<std::string> lower, upper;
          for (const PipeInstruction& c : all[s][t]) {
            if (c.op == PipeOp::kSendActivation) lower.push_back("A" + std::to_string(c.micro_batch));
            if (c.op == PipeOp::kRecvGrad) lower.push_back("G" + std::to_string(c.micro_batch));
          }
          for (const PipeInstruction& c : all[s + 1][t]) {
            if (c.op == PipeOp::kRecvActivation) upper.push_back("A" + std::to_string(c.micro_batch));
            if (c.op == PipeOp::kSendGrad) upper.push_back("G" + std::to_string(c.micro_batch));
          }
          EXPECT_EQ(lower, upper) << "step " << t << ", stages " << s << " and " << s + 1;
          // A stage never talks to both neighbours in one step: the pairs are disjoint.
          if (!lower.empty() && s > 0) {
            for (const PipeInstruction& c : all[s][t]) {
              EXPECT_NE(c.op, PipeOp::kRecvActivation);
              EXPECT_NE(c.op, PipeOp::kSendGrad);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace dsp
