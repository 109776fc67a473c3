// SPDX-License-Identifier: Apache-2.0
#include "exec/model/tiny_config.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace dsp::exec {
namespace {

ParallelSizes Sizes(int tp, int sp, int ep) {
  ParallelSizes s;
  s.world = 8;
  s.tp = tp;
  s.sp = sp;
  s.ep = ep;
  s.expert_parallel = ep > 1;
  return s;
}

TEST(TinyConfigTest, WidthsDivideByWhatShardsThem) {
  for (int tp : {1, 2, 4, 8}) {
    for (int sp : {1, 2, 4, 8}) {
      if (tp > 1 && sp > 1) continue;  // DeepSpeed does not combine AutoTP and Ulysses
      auto t = MakeTinyConfig(DefaultTinyModel(false), Sizes(tp, sp, 1), 2);
      ASSERT_TRUE(t.ok());
      EXPECT_EQ(t->heads % tp, 0);
      EXPECT_EQ(t->kv_heads % tp, 0);
      EXPECT_EQ(t->heads % sp, 0);
      EXPECT_EQ(t->kv_heads % sp, 0);
      EXPECT_EQ(t->intermediate % tp, 0);
      EXPECT_EQ(t->seq_len % sp, 0);
      EXPECT_EQ(t->heads % t->kv_heads, 0);
    }
  }
}

// Two decoder layers, one per pipeline stage beyond that; a checkpoint's count when resuming, if
// the stages divide it.
TEST(TinyConfigTest, LayersFollowThePipelineOrTheCheckpoint) {
  ParallelSizes s = Sizes(1, 1, 1);
  for (const auto& [pp, layers] : std::vector<std::pair<int, int64_t>>{{1, 2}, {2, 2}, {3, 3}, {4, 4}, {6, 6}}) {
    s.pp = pp;
    EXPECT_EQ(MakeTinyConfig(DefaultTinyModel(false), s, 2)->layers, layers) << "pp " << pp;
  }
  s.pp = 1;
  EXPECT_EQ(MakeTinyConfig(DefaultTinyModel(false), s, 2, /*layers=*/4)->layers, 4);
  s.pp = 2;
  EXPECT_EQ(MakeTinyConfig(DefaultTinyModel(false), s, 2, /*layers=*/4)->layers, 4);
  s.pp = 4;
  auto refused = MakeTinyConfig(DefaultTinyModel(false), s, 2, /*layers=*/2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("has 2 layers, which 4 pipeline stages cannot split evenly"),
            std::string::npos)
      << refused.error().message;
}

TEST(TinyConfigTest, KeepsGroupedQueryAttentionWhenItCan) {
  auto t = MakeTinyConfig(DefaultTinyModel(false), Sizes(2, 1, 1), 2);
  ASSERT_TRUE(t.ok());
  EXPECT_LT(t->kv_heads, t->heads);
}

TEST(TinyConfigTest, MoeKeepsTopKAndSplitsExpertsOverEp) {
  for (int ep : {1, 2, 4, 8}) {
    auto t = MakeTinyConfig(DefaultTinyModel(true), Sizes(1, 1, ep), 2);
    ASSERT_TRUE(t.ok());
    EXPECT_TRUE(t->is_moe());
    EXPECT_EQ(t->experts % ep, 0);
    EXPECT_EQ(t->top_k, 2);
    EXPECT_TRUE(t->norm_topk_prob);
  }
}

TEST(TinyConfigTest, ExpertParallelNeedsAnMoeModel) {
  auto t = MakeTinyConfig(DefaultTinyModel(false), Sizes(1, 1, 4), 2);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("has no experts"), std::string::npos);
}

TEST(TinyConfigTest, MicroBatchIsCappedForSpeed) {
  EXPECT_EQ(MakeTinyConfig(DefaultTinyModel(false), Sizes(1, 1, 1), 64)->micro_batch, 4);
  EXPECT_EQ(MakeTinyConfig(DefaultTinyModel(false), Sizes(1, 1, 1), 1)->micro_batch, 1);
}

}  // namespace
}  // namespace dsp::exec
