// SPDX-License-Identifier: Apache-2.0
// Names, GroupsContaining (--rank) and CrossesNode.
#include <gtest/gtest.h>

#include "core/layout/groups.h"
#include "tests/core/layout/group_test_util.h"

namespace dsp {
namespace {

using testing::Build;
using testing::G;
using testing::Kind;
using testing::Moe;

TEST(GroupUtilsTest, KindNames) {
  EXPECT_EQ(GroupKindName(GroupKind::kTp), "tp");
  EXPECT_EQ(GroupKindName(GroupKind::kDp), "dp");
  EXPECT_EQ(GroupKindName(GroupKind::kSp), "sp");
  EXPECT_EQ(GroupKindName(GroupKind::kSpDp), "sp_dp");
  EXPECT_EQ(GroupKindName(GroupKind::kEp), "ep");
  EXPECT_EQ(GroupKindName(GroupKind::kEdp), "edp");
  EXPECT_EQ(GroupKindName(GroupKind::kPp), "pp");
}

TEST(GroupUtilsTest, ExpertLayoutNames) {
  EXPECT_EQ(ExpertLayoutName(ExpertLayout::kAuto), "auto");
  EXPECT_EQ(ExpertLayoutName(ExpertLayout::kExpertsFirst), "e+d");
  EXPECT_EQ(ExpertLayoutName(ExpertLayout::kDataFirst), "d+e");
  EXPECT_EQ(ExpertLayoutName(ExpertLayout::kLaneMajor), "lane-major");
  EXPECT_EQ(ExpertLayoutName(ExpertLayout::kFolding), "folding");
  EXPECT_EQ(ExpertLayoutName(ExpertLayout::kMegatronMpu), "mpu");
}

TEST(GroupUtilsTest, GroupsContainingRank) {
  GroupTables t = Build(Moe(16, 2, 4, 2), RankLayout::kMegatron);
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kTp), 9), G("[8,9]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kDp), 9), G("[9,11,13,15]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kPp), 9), G("[1,9]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEp), 9), G("[8-11]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEdp), 9), G("[9,13]"));
  EXPECT_TRUE(GroupsContaining(Kind(t, GroupKind::kTp), 16).empty());
  EXPECT_TRUE(GroupsContaining(Kind(t, GroupKind::kTp), -1).empty());
  // A list that is not a partition returns every match.
  EXPECT_EQ(GroupsContaining(G("[0,1] [1,2] [3]"), 1), G("[0,1] [1,2]"));
}

TEST(GroupUtilsTest, CrossesNode) {
  EXPECT_FALSE(CrossesNode({0, 1, 2, 3}, 4));
  EXPECT_TRUE(CrossesNode({2, 3, 4, 5}, 4));
  EXPECT_TRUE(CrossesNode({0, 8}, 8));
  EXPECT_FALSE(CrossesNode({8, 15}, 8));
  EXPECT_FALSE(CrossesNode({0}, 1));
  EXPECT_TRUE(CrossesNode({0, 1}, 1));
  EXPECT_FALSE(CrossesNode({}, 8));
  EXPECT_FALSE(CrossesNode({0, 9}, 0));  // unknown node size
  EXPECT_FALSE(CrossesNode({0, 9}, -8));
}

TEST(GroupUtilsTest, NodeCrossingOfDenseDpOnTwoNodes) {
  // W=16 on 2 nodes of 8: TP stays on one node; dense DP groups span both.
  ParallelSizes s;
  s.world = 16;
  s.tp = 8;
  GroupTables t = Build(s);
  for (const RankGroup& g : Kind(t, GroupKind::kTp)) EXPECT_FALSE(CrossesNode(g, 8));
  for (const RankGroup& g : Kind(t, GroupKind::kDp)) EXPECT_TRUE(CrossesNode(g, 8));
}

}  // namespace
}  // namespace dsp
