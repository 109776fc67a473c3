// SPDX-License-Identifier: Apache-2.0
// AutoEP + AutoTP folding (path C): four worked shapes, the
// extra test-verified shapes, local_folding_ranks tuples, and the rejected examples with the
// messages DeepSpeed's build_folding_spec / validate_folding_global raise.
#include <gtest/gtest.h>

#include "core/layout/groups.h"
#include "tests/core/layout/group_test_util.h"

namespace dsp {
namespace {

using testing::Build;
using testing::BuildError;
using testing::G;
using testing::Kind;
using testing::Moe;

struct FoldingShape {
  int world, tp, ep, dp, edp;
  const char *tp_groups, *dp_groups, *ep_groups, *edp_groups;
};

TEST(FoldingGroupsTest, RequestedShapes) {
  const FoldingShape shapes[] = {
      {4, 4, 4, 1, 1, "[0,1,2,3]", "[0] [1] [2] [3]", "[0,1,2,3]", "[0] [1] [2] [3]"},
      {4, 2, 4, 2, 1, "[0,1] [2,3]", "[0,2] [1,3]", "[0,1,2,3]", "[0] [1] [2] [3]"},
      {8, 4, 4, 2, 2, "[0,1,2,3] [4,5,6,7]", "[0,4] [1,5] [2,6] [3,7]", "[0,1,2,3] [4,5,6,7]",
       "[0,4] [1,5] [2,6] [3,7]"},
      {8, 2, 4, 4, 2, "[0,1] [2,3] [4,5] [6,7]", "[0,2,4,6] [1,3,5,7]", "[0,1,2,3] [4,5,6,7]",
       "[0,4] [1,5] [2,6] [3,7]"},
  };
  for (const FoldingShape& f : shapes) {
    SCOPED_TRACE("W=" + std::to_string(f.world) + " TP=" + std::to_string(f.tp) +
                 " EP=" + std::to_string(f.ep));
    Result<DerivedSizes> sizes = Derive(Moe(f.world, f.tp, f.ep));
    ASSERT_TRUE(sizes.ok());
    EXPECT_EQ(sizes->dp, f.dp);
    EXPECT_EQ(sizes->edp, f.edp);
    GroupTables t = Build(Moe(f.world, f.tp, f.ep));
    EXPECT_EQ(t.expert_layout, ExpertLayout::kFolding);
    EXPECT_EQ(Kind(t, GroupKind::kTp), G(f.tp_groups));
    EXPECT_EQ(Kind(t, GroupKind::kDp), G(f.dp_groups));
    EXPECT_EQ(Kind(t, GroupKind::kEp), G(f.ep_groups));
    EXPECT_EQ(Kind(t, GroupKind::kEdp), G(f.edp_groups));
  }
}

TEST(FoldingGroupsTest, ExtraVerifiedShapes) {
  GroupTables t = Build(Moe(16, 2, 4));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0-3] [4-7] [8-11] [12-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]"));
  t = Build(Moe(16, 2, 8));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0-7] [8-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]"));
}

TEST(FoldingGroupsTest, LocalRankTuples) {
  // local_folding_ranks(2) for W=4 TP=2 EP=2: tp (2,3), ep (2,3), edp (0,2).
  GroupTables t = Build(Moe(4, 2, 2));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kTp), 2), G("[2,3]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kDp), 2), G("[0,2]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEp), 2), G("[2,3]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEdp), 2), G("[0,2]"));
  // local_folding_ranks(5) for W=8 TP=2 EP=4: tp (4,5), dense_dp (1,3,5,7), ep (4..7), edp (1,5).
  t = Build(Moe(8, 2, 4));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kTp), 5), G("[4,5]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kDp), 5), G("[1,3,5,7]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEp), 5), G("[4,5,6,7]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEdp), 5), G("[1,5]"));
}

TEST(FoldingGroupsTest, StaleLaneMajorTablesDiffer) {
  // The folding tests reject path (B)'s lists (EP (0,2,4,6), EDP (0,1)) as stale.
  GroupTables c = Build(Moe(8, 2, 4));
  GroupTables b = Build(Moe(8, 2, 4), RankLayout::kDeepSpeed, ExpertLayout::kLaneMajor);
  EXPECT_NE(Kind(c, GroupKind::kEp), Kind(b, GroupKind::kEp));
  EXPECT_EQ(GroupsContaining(Kind(b, GroupKind::kEp), 0), G("[0,2,4,6]"));
  EXPECT_EQ(GroupsContaining(Kind(b, GroupKind::kEdp), 0), G("[0,1]"));
}

TEST(FoldingGroupsTest, RejectsTensorParallelNotDividingStage) {
  EXPECT_EQ(BuildError(Moe(8, 3, 4)),
            "tensor_parallel.autotp_size=3 must divide the stage size (world_size=8 / pp_size=1 "
            "= 8). Computed dp would be non-integral. Valid autotp_size values: [1, 2, 4, 8]");
}

TEST(FoldingGroupsTest, RejectsExpertWidthNotDividingStage) {
  EXPECT_EQ(BuildError(Moe(8, 2, 3)),
            "expert_parallel.autoep_size * expert_parallel.expert_tensor_parallel_size (3 * 1 = "
            "3) must divide the stage size (world_size=8 / pp_size=1 = 8). Computed edp would be "
            "non-integral. Valid expert-width values: [1, 2, 4, 8]");
}

TEST(FoldingGroupsTest, RejectsFoldingWithoutExpertParallelism) {  // rule f
  EXPECT_EQ(BuildError(Moe(4, 2, 1)),
            "AutoEP+AutoTP folding requires expert_parallel.autoep_size > 1. The ep=1 "
            "local-computation path would duplicate routed-token gradients across TP lanes.");
}

TEST(FoldingGroupsTest, RejectsFoldingWithPipeline) {  // rule b
  EXPECT_EQ(BuildError(Moe(8, 2, 2, 2)),
            "AutoEP+AutoTP folding currently supports pp_size=1 only; got pp_size=2. "
            "Pipeline-parallel validation is planned separately.");
  // Without AutoEP the same sizes are an ordinary TP + PP layout.
  ParallelSizes dense = Moe(8, 2, 2, 2);
  dense.expert_parallel = false;
  EXPECT_TRUE(BuildGroupTables(dense).ok());
  // As an explicit what-if the folding tables are computed per stage.
  GroupTables t = Build(Moe(8, 2, 2, 2), RankLayout::kDeepSpeed, ExpertLayout::kFolding);
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,2] [1,3] [4,6] [5,7]"));
}

TEST(FoldingGroupsTest, RejectsExpertTensorParallelAnywhere) {  // rule d
  const std::string message =
      "expert_parallel.expert_tensor_parallel_size=2 is reserved for expert-internal tensor "
      "parallelism and is not supported yet. Use 1; ETP support is planned as follow-up work.";
  ParallelSizes s = Moe(8, 2, 2);
  s.etp = 2;
  EXPECT_EQ(BuildError(s), message);
  s.tp = 1;  // even without TP
  EXPECT_EQ(BuildError(s), message);
  EXPECT_EQ(BuildError(s, RankLayout::kDeepSpeed, ExpertLayout::kExpertsFirst), message);
  // Megatron has expert tensor parallelism.
  EXPECT_TRUE(BuildGroupTables(s, RankLayout::kMegatron).ok());
}

TEST(FoldingGroupsTest, RejectsDataBeforeExpertWithFolding) {  // rule g
  ParallelSizes s = Moe(8, 2, 4);
  s.data_before_expert = true;
  EXPECT_EQ(BuildError(s),
            "expert_parallel with use_data_before_expert_parallel_ is not supported with "
            "AutoEP+AutoTP folding. Disable use_data_before_expert_parallel_.");
}

TEST(FoldingGroupsTest, RuleOrderFollowsDeepSpeed) {
  // b before d before f: W=8 PP=2 TP=2 EP=1 ETP=2 reports the pipeline rule.
  ParallelSizes s = Moe(8, 2, 1, 2);
  s.etp = 2;
  EXPECT_NE(BuildError(s).find("pp_size=1 only"), std::string::npos);
  s.pp = 1;
  EXPECT_NE(BuildError(s).find("expert_tensor_parallel_size=2"), std::string::npos);
  s.etp = 1;
  EXPECT_NE(BuildError(s).find("autoep_size > 1"), std::string::npos);
}

}  // namespace
}  // namespace dsp
