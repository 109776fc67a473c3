// SPDX-License-Identifier: Apache-2.0
// DeepSpeed layout: worked tables (recomputed by hand from deepspeed/utils/groups.py) for every EP/EDP code path,
// SP / SP+DP, pipeline stages, the (B) straddling example and the (D) docstring example.
#include <gtest/gtest.h>

#include "core/layout/groups.h"
#include "core/layout/layout_internal.h"
#include "tests/core/layout/group_test_util.h"

namespace dsp {
namespace {

using testing::Build;
using testing::BuildError;
using testing::G;
using testing::Kind;
using testing::Moe;
using testing::Singletons;

struct ExpertCase {
  ExpertLayout layout;
  const char* ep;
  const char* edp;
};

TEST(DeepSpeedGroupsTest, W8Tp2Ep4DenseGroups) {
  GroupTables t = Build(Moe(8, 2, 4));
  EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6] [1,3,5,7]"));
  EXPECT_FALSE(t.groups.count(GroupKind::kSp));
  EXPECT_FALSE(t.groups.count(GroupKind::kSpDp));
  EXPECT_FALSE(t.groups.count(GroupKind::kPp));
  EXPECT_EQ(t.expert_layout, ExpertLayout::kFolding);  // AutoEP + AutoTP -> folding (C)
}

TEST(DeepSpeedGroupsTest, W8Tp2Ep4EveryExpertPath) {
  const ExpertCase cases[] = {
      {ExpertLayout::kAuto, "[0,1,2,3] [4,5,6,7]", "[0,4] [1,5] [2,6] [3,7]"},  // (C)
      {ExpertLayout::kExpertsFirst, "[0,1,2,3] [4,5,6,7]", "[0,4] [1,5] [2,6] [3,7]"},
      {ExpertLayout::kFolding, "[0,1,2,3] [4,5,6,7]", "[0,4] [1,5] [2,6] [3,7]"},
      {ExpertLayout::kDataFirst, "[0,2,4,6] [1,3,5,7]", "[0,1] [2,3] [4,5] [6,7]"},
      {ExpertLayout::kLaneMajor, "[0,2,4,6] [1,3,5,7]", "[0,1] [2,3] [4,5] [6,7]"},
      {ExpertLayout::kMegatronMpu, "[0,2,4,6] [1,3,5,7]", "[0] [2] [4] [6] [1] [3] [5] [7]"},
  };
  for (const ExpertCase& c : cases) {
    SCOPED_TRACE(ExpertLayoutName(c.layout));
    GroupTables t = Build(Moe(8, 2, 4), RankLayout::kDeepSpeed, c.layout);
    EXPECT_EQ(Kind(t, GroupKind::kEp), G(c.ep));
    EXPECT_EQ(Kind(t, GroupKind::kEdp), G(c.edp));
    // The dense groups do not depend on the expert path.
    EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0,1] [2,3] [4,5] [6,7]"));
    EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6] [1,3,5,7]"));
    if (c.layout != ExpertLayout::kAuto) {
      EXPECT_EQ(t.expert_layout, c.layout);
    }
  }
}

TEST(DeepSpeedGroupsTest, W8Sp2UlyssesAndSpModeExperts) {
  ParallelSizes s = Moe(8, 1, 4);
  s.sp = 2;
  GroupTables t = Build(s);
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kSpDp), G("[0..7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6] [1,3,5,7]"));  // mesh (dp=4, sp=2)
  EXPECT_FALSE(t.groups.count(GroupKind::kTp));
  // (B') sp-mode: consecutive order, identical to (A).
  EXPECT_EQ(t.expert_layout, ExpertLayout::kExpertsFirst);
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,1,2,3] [4,5,6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,4] [1,5] [2,6] [3,7]"));
  layout_internal::ExpertGroups b_prime =
      layout_internal::ModelParallelExpertGroups(8, 8, /*mp_size=*/2, /*tp_lane_major=*/false, 4);
  layout_internal::ExpertGroups a = layout_internal::LegacyExpertGroups(8, 8, 4, false);
  layout_internal::Canonicalize(b_prime.ep);
  layout_internal::Canonicalize(b_prime.edp);
  layout_internal::Canonicalize(a.ep);
  layout_internal::Canonicalize(a.edp);
  EXPECT_EQ(b_prime.ep, a.ep);
  EXPECT_EQ(b_prime.edp, a.edp);
}

TEST(DeepSpeedGroupsTest, W16Tp4Ep4EveryExpertPath) {
  const char* contiguous = "[0-3] [4-7] [8-11] [12-15]";
  const char* strided = "[0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]";
  const ExpertCase cases[] = {
      {ExpertLayout::kAuto, contiguous, strided},
      {ExpertLayout::kExpertsFirst, contiguous, strided},
      {ExpertLayout::kFolding, contiguous, strided},
      {ExpertLayout::kDataFirst, strided, contiguous},
      {ExpertLayout::kLaneMajor, strided, contiguous},
  };
  for (const ExpertCase& c : cases) {
    SCOPED_TRACE(ExpertLayoutName(c.layout));
    GroupTables t = Build(Moe(16, 4, 4), RankLayout::kDeepSpeed, c.layout);
    EXPECT_EQ(Kind(t, GroupKind::kTp), G(contiguous));
    EXPECT_EQ(Kind(t, GroupKind::kDp), G(strided));
    EXPECT_EQ(Kind(t, GroupKind::kEp), G(c.ep));
    EXPECT_EQ(Kind(t, GroupKind::kEdp), G(c.edp));
  }
  GroupTables d = Build(Moe(16, 4, 4), RankLayout::kDeepSpeed, ExpertLayout::kMegatronMpu);
  EXPECT_EQ(Kind(d, GroupKind::kEp), G(strided));
  EXPECT_EQ(Kind(d, GroupKind::kEdp), Singletons(16));
  // Folding spec: dp=4, edp=4, and every EP group is a TP group.
  GroupTables c = Build(Moe(16, 4, 4));
  EXPECT_EQ(Kind(c, GroupKind::kEp), Kind(c, GroupKind::kTp));
  Result<DerivedSizes> sizes = Derive(Moe(16, 4, 4));
  ASSERT_TRUE(sizes.ok());
  EXPECT_EQ(sizes->dp, 4);
  EXPECT_EQ(sizes->edp, 4);
}

TEST(DeepSpeedGroupsTest, W16Sp4Ulysses) {
  ParallelSizes s;
  s.world = 16;
  s.sp = 4;
  GroupTables t = Build(s);
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0-3] [4-7] [8-11] [12-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kSpDp), G("[0..15]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]"));
  EXPECT_FALSE(t.groups.count(GroupKind::kEp));
}

TEST(DeepSpeedGroupsTest, LaneMajorStraddlesLanes) {
  // W=4, TP=2, EP=4: lane-major order 0,2,1,3 is one EP chunk; EDP groups are singletons.
  layout_internal::ExpertGroups raw =
      layout_internal::ModelParallelExpertGroups(4, 4, /*mp_size=*/2, /*tp_lane_major=*/true, 4);
  EXPECT_EQ(raw.ep, (std::vector<RankGroup>{{0, 2, 1, 3}}));
  EXPECT_EQ(raw.edp, (std::vector<RankGroup>{{0}, {2}, {1}, {3}}));
  GroupTables t = Build(Moe(4, 2, 4), RankLayout::kDeepSpeed, ExpertLayout::kLaneMajor);
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,1,2,3]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), Singletons(4));

  // W=12, TP=2, EP=4: g = 6 is not a multiple of 4, so the middle chunk spans both lanes.
  raw = layout_internal::ModelParallelExpertGroups(12, 12, 2, true, 4);
  EXPECT_EQ(raw.ep, (std::vector<RankGroup>{{0, 2, 4, 6}, {8, 10, 1, 3}, {5, 7, 9, 11}}));
  EXPECT_EQ(raw.edp, (std::vector<RankGroup>{{0, 8, 5}, {2, 10, 7}, {4, 1, 9}, {6, 3, 11}}));
}

TEST(DeepSpeedGroupsTest, MegatronMpuDocstringExample) {
  // _get_expert_parallel_ranks docstring, W=16, TP=2, EP=4, in DeepSpeed's creation order.
  Result<layout_internal::ExpertGroups> raw =
      layout_internal::MegatronMpuExpertGroups(16, 2, 4, 1, false);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->ep,
            (std::vector<RankGroup>{{0, 2, 4, 6}, {8, 10, 12, 14}, {1, 3, 5, 7}, {9, 11, 13, 15}}));
  EXPECT_EQ(raw->edp, (std::vector<RankGroup>{
                          {0, 8}, {2, 10}, {4, 12}, {6, 14}, {1, 9}, {3, 11}, {5, 13}, {7, 15}}));
  GroupTables t = Build(Moe(16, 2, 4), RankLayout::kDeepSpeed, ExpertLayout::kMegatronMpu);
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,2,4,6],[8,10,12,14],[1,3,5,7],[9,11,13,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,8],[2,10],[4,12],[6,14],[1,9],[3,11],[5,13],[7,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6,8,10,12,14] [1,3,5,7,9,11,13,15]"));
}

TEST(DeepSpeedGroupsTest, MegatronMpuDataFirstInterleaves) {
  // The D+E comment in groups.py: W=32, TP=2, dp_stride 2 -> lane 0 = [0,4,..,28, 2,6,..,30].
  Result<layout_internal::ExpertGroups> raw =
      layout_internal::MegatronMpuExpertGroups(32, 2, 8, 1, true);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->ep[0], (RankGroup{0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_EQ(raw->ep[1], (RankGroup{2, 6, 10, 14, 18, 22, 26, 30}));
  EXPECT_EQ(raw->edp[0], (RankGroup{0, 2}));
  EXPECT_EQ(raw->edp[7], (RankGroup{28, 30}));
  ParallelSizes s = Moe(32, 2, 8);
  s.data_before_expert = true;
  GroupTables t = Build(s, RankLayout::kDeepSpeed, ExpertLayout::kMegatronMpu);
  EXPECT_EQ(Kind(t, GroupKind::kEdp).size(), 16u);
}

TEST(DeepSpeedGroupsTest, MegatronMpuRequiresDpMultipleOfEp) {
  // Folding accepts EP > DP; path (D) asserts dp % EP == 0 (dp = 4 here).
  EXPECT_TRUE(BuildGroupTables(Moe(8, 2, 8)).ok());
  EXPECT_EQ(BuildError(Moe(8, 2, 8), RankLayout::kDeepSpeed, ExpertLayout::kMegatronMpu),
            "expert layout 'mpu' (DeepSpeed _get_expert_parallel_ranks): 4 is not divisible by "
            "8: the data-parallel size 4 (world_size=8 / (tp=2 * pp=1)) must be a multiple of "
            "expert_parallel.autoep_size=8. Valid autoep_size values: [1, 2, 4]");
}

TEST(DeepSpeedGroupsTest, PipelineStagesAreOutermost) {
  ParallelSizes s;
  s.world = 16;
  s.tp = 2;
  s.pp = 2;
  GroupTables t = Build(s);
  EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0,1] [2,3] [4,5] [6,7] [8,9] [10,11] [12,13] [14,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kPp), G("[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]"));

  // SP with PP: the sequence-data-parallel group is one stage.
  s = Moe(8, 1, 2, 2);
  s.sp = 2;
  t = Build(s);
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kSpDp), G("[0-3] [4-7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2] [1,3] [4,6] [5,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kPp), G("[0,4] [1,5] [2,6] [3,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,2] [1,3] [4,6] [5,7]"));

  // Legacy paths per stage: W=16, PP=2, EP=2 (A) and (A').
  t = Build(Moe(16, 1, 2, 2));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15]"));
  ParallelSizes d = Moe(16, 1, 2, 2);
  d.data_before_expert = true;
  t = Build(d);
  EXPECT_EQ(t.expert_layout, ExpertLayout::kDataFirst);
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0-3] [4-7] [8-11] [12-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]"));
}

TEST(DeepSpeedGroupsTest, DenseOnlyShapes) {
  ParallelSizes s;
  s.world = 4;
  GroupTables t = Build(s);
  EXPECT_EQ(t.groups.size(), 1u);  // only dp: the whole world
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0-3]"));
  s.world = 1;
  t = Build(s);
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0]"));
  s.world = 8;
  s.tp = 0;  // autotp_size 0 = off
  t = Build(s);
  EXPECT_FALSE(t.groups.count(GroupKind::kTp));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0..7]"));
}

TEST(DeepSpeedGroupsTest, TensorAndSequenceParallelCannotCombine) {
  ParallelSizes s;
  s.world = 8;
  s.tp = 2;
  s.sp = 2;
  EXPECT_EQ(BuildError(s),
            "tensor_parallel.autotp_size=2 and Ulysses sequence parallelism "
            "(sequence_parallel_size=2) cannot be combined in DeepSpeed: AutoTP's (dp, tp) mesh "
            "and Ulysses' (dp, sp) mesh both take the adjacent ranks, and AutoEP folding rejects "
            "the pair as mutually exclusive. Use one of them (Megatron's layout combines TP with "
            "CP).");
  // Megatron's layout accepts the same sizes (TP x CP).
  EXPECT_TRUE(BuildGroupTables(s, RankLayout::kMegatron).ok());
}

TEST(DeepSpeedGroupsTest, DataFirstWithSequenceParallelIsNotImplemented) {
  ParallelSizes s = Moe(8, 1, 2);
  s.sp = 2;
  s.data_before_expert = true;
  EXPECT_EQ(BuildError(s),
            "use_data_before_expert_parallelism is not supported with Ulysses sequence "
            "parallelism (sequence_parallel_size=2): DeepSpeed raises "
            "NotImplementedError(\"use_data_before_expert_parallel_ is not supported with "
            "mp_size > 1\")");
  // The legacy D+E code path itself can still be inspected explicitly.
  GroupTables t = Build(s, RankLayout::kDeepSpeed, ExpertLayout::kDataFirst);
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,4] [1,5] [2,6] [3,7]"));
}

TEST(DeepSpeedGroupsTest, ResolvedLayoutWithoutAutoEp) {
  ParallelSizes s;
  s.world = 8;
  s.tp = 2;
  GroupTables t = Build(s);
  EXPECT_EQ(t.expert_layout, ExpertLayout::kExpertsFirst);
  EXPECT_FALSE(t.groups.count(GroupKind::kEp));
  EXPECT_FALSE(t.groups.count(GroupKind::kEdp));
  s.data_before_expert = true;
  EXPECT_EQ(Build(s).expert_layout, ExpertLayout::kDataFirst);
  EXPECT_EQ(Build(s, RankLayout::kDeepSpeed, ExpertLayout::kLaneMajor).expert_layout,
            ExpertLayout::kLaneMajor);
}

}  // namespace
}  // namespace dsp
