// SPDX-License-Identifier: Apache-2.0
// Derive(): derived sizes and the exact wording of every divisibility error.
#include "core/layout/parallel_sizes.h"

#include <gtest/gtest.h>

namespace dsp {
namespace {

ParallelSizes Sizes(int world, int tp = 1, int sp = 1, int pp = 1) {
  ParallelSizes s;
  s.world = world;
  s.tp = tp;
  s.sp = sp;
  s.pp = pp;
  return s;
}

std::string ErrorOf(const ParallelSizes& s) {
  Result<DerivedSizes> d = Derive(s);
  EXPECT_FALSE(d.ok());
  return d.ok() ? "" : d.error().message;
}

TEST(ParallelSizesTest, DerivesStageDpEdp) {
  ParallelSizes s = Sizes(16, 2, 1, 2);
  s.expert_parallel = true;
  s.ep = 4;
  Result<DerivedSizes> d = Derive(s);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->stage, 8);
  EXPECT_EQ(d->dp, 4);
  EXPECT_EQ(d->edp, 2);

  d = Derive(Sizes(8, 1, 4));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->dp, 2);
  EXPECT_EQ(d->edp, 8);  // no AutoEP: ep and etp count as 1
}

TEST(ParallelSizesTest, AutoTpZeroMeansOff) {
  Result<DerivedSizes> d = Derive(Sizes(8, 0));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->dp, 8);
  EXPECT_EQ(EffectiveTp(0), 1);
  EXPECT_EQ(EffectiveTp(4), 4);
}

TEST(ParallelSizesTest, ExpertSizesIgnoredWithoutAutoEp) {
  ParallelSizes s = Sizes(8);
  s.ep = 3;  // would not divide 8, but AutoEP is off
  s.etp = 0;
  EXPECT_TRUE(Derive(s).ok());
}

TEST(ParallelSizesTest, RejectsNonPositiveSizes) {
  EXPECT_EQ(ErrorOf(Sizes(0)), "world_size must be a positive integer, got 0");
  EXPECT_EQ(ErrorOf(Sizes(8, 1, 1, 0)), "pp_size must be a positive integer, got 0");
  EXPECT_EQ(ErrorOf(Sizes(8, -2)),
            "tensor_parallel.autotp_size must be a positive integer (0 or 1 = off), got -2");
  EXPECT_EQ(ErrorOf(Sizes(8, 1, 0)), "sequence_parallel_size must be a positive integer, got 0");
  ParallelSizes s = Sizes(8);
  s.expert_parallel = true;
  s.ep = 0;
  EXPECT_EQ(ErrorOf(s), "expert_parallel.autoep_size must be a positive integer, got 0");
  s.ep = 2;
  s.etp = -1;
  EXPECT_EQ(ErrorOf(s),
            "expert_parallel.expert_tensor_parallel_size must be a positive integer, got -1");
}

TEST(ParallelSizesTest, PipelineMustDivideWorld) {
  EXPECT_EQ(ErrorOf(Sizes(12, 1, 1, 5)),
            "pp_size=5 must divide world_size=12. Valid pp_size values: [1, 2, 3, 4, 6, 12]");
}

TEST(ParallelSizesTest, TensorParallelMustDivideStage) {
  // Rejected by build_folding_spec: W=8 TP=3.
  EXPECT_EQ(ErrorOf(Sizes(8, 3)),
            "tensor_parallel.autotp_size=3 must divide the stage size (world_size=8 / pp_size=1 "
            "= 8). Computed dp would be non-integral. Valid autotp_size values: [1, 2, 4, 8]");
  EXPECT_EQ(ErrorOf(Sizes(16, 8, 1, 4)),
            "tensor_parallel.autotp_size=8 must divide the stage size (world_size=16 / "
            "pp_size=4 = 4). Computed dp would be non-integral. Valid autotp_size values: "
            "[1, 2, 4]");
}

TEST(ParallelSizesTest, SequenceParallelMustDivideLane) {
  EXPECT_EQ(ErrorOf(Sizes(12, 2, 4)),
            "sequence_parallel_size=4 must divide the ranks per tensor-parallel lane "
            "(world_size=12 / pp_size=1 / autotp_size=2 = 6). Computed dp would be "
            "non-integral. Valid sequence_parallel_size values: [1, 2, 3, 6]");
}

TEST(ParallelSizesTest, ExpertWidthMustDivideStage) {
  // Rejected by build_folding_spec: W=8 TP=2 EP=3.
  ParallelSizes s = Sizes(8, 2);
  s.expert_parallel = true;
  s.ep = 3;
  EXPECT_EQ(ErrorOf(s),
            "expert_parallel.autoep_size * expert_parallel.expert_tensor_parallel_size (3 * 1 = "
            "3) must divide the stage size (world_size=8 / pp_size=1 = 8). Computed edp would be "
            "non-integral. Valid expert-width values: [1, 2, 4, 8]");
  s.ep = 4;
  s.etp = 4;
  EXPECT_NE(ErrorOf(s).find("(4 * 4 = 16)"), std::string::npos);
}

}  // namespace
}  // namespace dsp
