// SPDX-License-Identifier: Apache-2.0
#include "sim/session/dials.h"

#include <gtest/gtest.h>

#include "core/util/file_io.h"

namespace dsp::sim {
namespace {

std::string Source(const std::string& rel) { return ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel).value(); }

std::unique_ptr<Session> Open(const char* config, const char* model, int64_t world) {
  PlanKnobs k;
  k.world_size = world;
  return std::make_unique<Session>(
      config, Source(config), ParseHfConfig(Json::parse(Source(model))).value(),
      ParseCluster(Json::parse(Source("samples/clusters/h100-sxm.json"), nullptr, true, true)).value(), k);
}

const Dial& Named(const std::string& label) {
  for (const Dial& d : Dials()) {
    if (d.label == label) return d;
  }
  ADD_FAILURE() << "no dial " << label;
  return Dials().front();
}

TEST(DialsTest, TensorParallelStepsThroughTheDivisorsOfTheWorld) {
  auto s = Open("samples/configs/zero3-offload.json", "samples/models/llama-3-70b.json", 24);
  const Dial& tp = Named("tensor parallel");
  EXPECT_EQ(DialValue(*s, tp), "1");
  EXPECT_FALSE(DialIsSet(*s, tp));
  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(StepDial(*s, tp, +1).ok());
    seen.push_back(DialValue(*s, tp));
  }
  // 24's divisors: 2, 3, 4, 6 after 1 (validate judges each: 3 does not divide Llama's 8 KV heads).
  EXPECT_EQ(seen, (std::vector<std::string>{"2", "3", "4", "6"}));
  EXPECT_TRUE(DialIsSet(*s, tp));
  ASSERT_TRUE(StepDial(*s, tp, -1).ok());
  EXPECT_EQ(DialValue(*s, tp), "4");
}

TEST(DialsTest, ZeroStageStopsAtTheStagesDeepSpeedAccepts) {
  auto s = Open("samples/configs/zero3-offload.json", "samples/models/llama-3-70b.json", 8);
  const Dial& zero = Named("ZeRO stage");
  EXPECT_EQ(DialValue(*s, zero), "3");
  auto r = StepDial(*s, zero, +1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("largest"), std::string::npos);
  EXPECT_EQ(s->edits(), 0);
  ASSERT_TRUE(StepDial(*s, zero, -1).ok());
  EXPECT_EQ(s->now().plan.zero_stage, 2);
}

TEST(DialsTest, TrainBatchSizeFollowsTheLayoutWhenTheConfigStatesAllThree) {
  // autosp-sp4 states train_batch_size 4 = micro 1 x accumulation 2 x (world 8 / sp 4).
  auto s = Open("samples/configs/autosp-sp4.json", "samples/models/llama-3-8b.json", 8);
  ASSERT_TRUE(s->now().has_numbers());
  ASSERT_TRUE(StepDial(*s, Named("grad accumulation"), +1).ok());
  EXPECT_EQ(s->config()["gradient_accumulation_steps"], 4);
  EXPECT_EQ(s->config()["train_batch_size"], 8);
  EXPECT_TRUE(s->now().has_numbers());
  ASSERT_TRUE(StepDial(*s, Named("sequence parallel"), -1).ok());  // sp 4 -> 2: batch world 4
  EXPECT_EQ(s->config()["sequence_parallel_size"], 2);
  EXPECT_EQ(s->config()["train_batch_size"], 16);
  EXPECT_TRUE(s->now().has_numbers());
  // One edit each: undo takes back the step and the batch together.
  ASSERT_TRUE(s->Undo().ok());
  EXPECT_EQ(s->config()["train_batch_size"], 8);
}

TEST(DialsTest, ExpertParallelAppliesOnlyToMixtureOfExperts) {
  auto dense = Open("samples/configs/zero3-offload.json", "samples/models/llama-3-70b.json", 8);
  EXPECT_EQ(DialValue(*dense, Named("expert parallel")), "-");
  EXPECT_FALSE(StepDial(*dense, Named("expert parallel"), +1).ok());
  auto moe = Open("samples/configs/deepseek-v3-autoep.json", "samples/models/deepseek-v3.json", 256);
  EXPECT_EQ(DialValue(*moe, Named("expert parallel")), "64");
  ASSERT_TRUE(StepDial(*moe, Named("expert parallel"), +1).ok());
  EXPECT_EQ(moe->now().report.layout.ep, 128);
}

TEST(DialsTest, KnobsAndTypedValues) {
  auto s = Open("samples/configs/zero3-offload.json", "samples/models/llama-3-70b.json", 64);
  ASSERT_TRUE(StepDial(*s, Named("recompute"), +1).ok());
  EXPECT_EQ(DialValue(*s, Named("recompute")), "selective");
  ASSERT_TRUE(StepDial(*s, Named("sequence length"), +1).ok());
  EXPECT_EQ(s->now().input.workload.seq_len, 8192);
  ASSERT_TRUE(StepDial(*s, Named("nodes"), +1).ok());
  EXPECT_EQ(s->now().world_size, 128);
  ASSERT_TRUE(SetDial(*s, Named("micro batch"), "3").ok());
  EXPECT_EQ(s->now().micro_batch, 3);
  // A value off the list steps to its neighbour on the list.
  ASSERT_TRUE(StepDial(*s, Named("micro batch"), +1).ok());
  EXPECT_EQ(s->now().micro_batch, 4);
  EXPECT_EQ(DialValue(*s, Named("reduce bucket")), "5e+07");
  EXPECT_EQ(DialValue(*s, Named("offload params")), "cpu");
  ASSERT_TRUE(StepDial(*s, Named("offload params"), -1).ok());
  EXPECT_EQ(DialValue(*s, Named("offload params")), "none");
}

}  // namespace
}  // namespace dsp::sim
