// SPDX-License-Identifier: Apache-2.0
// Megatron-core: generate_masked_orthogonal_rank_groups / RankGenerator (megatron/core/parallel_state.py)
// and worked rank tables through BuildGroupTables(kMegatron).
#include <gtest/gtest.h>

#include "core/layout/groups.h"
#include "core/layout/megatron_rank_generator.h"
#include "tests/core/layout/group_test_util.h"

namespace dsp {
namespace {

using megatron::GenerateMaskedOrthogonalRankGroups;
using megatron::RankGenerator;
using testing::Build;
using testing::G;
using testing::Kind;
using testing::Moe;
using testing::Singletons;

using Groups = std::vector<std::vector<int>>;

Groups Ranks(const RankGenerator& gen, std::string_view token) {
  auto ranks = gen.GetRanks(token);
  EXPECT_TRUE(ranks.ok()) << (ranks.ok() ? "" : ranks.error().message);
  return ranks.ok() ? *ranks : Groups{};
}

RankGenerator Gen(int tp, int ep, int dp, int pp, int cp, std::string_view order, int offset = 0) {
  auto gen = RankGenerator::Create(tp, ep, dp, pp, cp, order, offset);
  EXPECT_TRUE(gen.ok()) << (gen.ok() ? "" : gen.error().message);
  return *gen;
}

GroupTables Megatron(ParallelSizes s) { return Build(s, RankLayout::kMegatron); }

TEST(MegatronGeneratorTest, DocstringExamples) {
  // order tp-pp-dp, sizes 2-2-2, dp group.
  auto dp = GenerateMaskedOrthogonalRankGroups(8, {2, 2, 2}, {false, false, true});
  ASSERT_TRUE(dp.ok());
  EXPECT_EQ(*dp, (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // [tp, dp, pp] = [2, 3, 4], dp mask: [0,2,4], [1,3,5], ..., [19,21,23] in emission order.
  dp = GenerateMaskedOrthogonalRankGroups(24, {2, 3, 4}, {false, true, false});
  ASSERT_TRUE(dp.ok());
  EXPECT_EQ(*dp, (Groups{{0, 2, 4},
                         {1, 3, 5},
                         {6, 8, 10},
                         {7, 9, 11},
                         {12, 14, 16},
                         {13, 15, 17},
                         {18, 20, 22},
                         {19, 21, 23}}));
}

TEST(MegatronGeneratorTest, MultiAxisMaskKeepsFastDigitFirst) {
  // tp-cp-dp-pp = 2-2-2-1: the dp-cp group has cp as the fast digit inside the group.
  auto g = GenerateMaskedOrthogonalRankGroups(8, {2, 2, 2, 1}, {false, true, true, false});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(MegatronGeneratorTest, WorldSizeMismatchFailsDecompose) {
  auto g = GenerateMaskedOrthogonalRankGroups(16, {2, 2, 2}, {true, false, false});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "idx 4 with shape [2, 2] mismatch the return idx [0, 0]");
}

TEST(MegatronGeneratorTest, RankGeneratorErrors) {
  auto both = RankGenerator::Create(1, 2, 2, 1, 2, "tp-cp-ep-dp-pp");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().message,
            "Both EP and CP > 1 in not allow in one rank generator. CP is only included in "
            "default RankGenerator, and EP only in expert RankGenerator.");
  auto missing = RankGenerator::Create(1, 4, 2, 1, 1, "tp-dp-pp");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "The size of (ep) is (4), but you haven'tspecified the order (tp-dp-pp).");
  RankGenerator gen = Gen(2, 1, 2, 1, 1, "tp-dp-pp");
  auto bad = gen.GetRanks("tp-xx");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "'xx' is not in list");
}

TEST(MegatronGeneratorTest, MissingSizeOneAxesAreAppended) {
  RankGenerator gen = Gen(2, 1, 2, 2, 1, "TP-DP-PP");
  EXPECT_EQ(gen.order(), "tp-dp-pp-ep-cp");
  EXPECT_EQ(gen.world_size(), 8);
  EXPECT_EQ(Ranks(gen, "ep"), Singletons(8));
}

TEST(MegatronGeneratorTest, TokenOrderDoesNotMatter) {
  RankGenerator gen = Gen(2, 1, 2, 2, 2, "tp-cp-ep-dp-pp");
  EXPECT_EQ(Ranks(gen, "dp-cp"), Ranks(gen, "cp-dp"));
  EXPECT_EQ(Ranks(gen, "tp-dp-cp"), Ranks(gen, "cp-tp-dp"));
}

TEST(MegatronGeneratorTest, RankOffset) {
  RankGenerator gen = Gen(2, 1, 2, 1, 1, "tp-dp", /*offset=*/8);
  EXPECT_EQ(Ranks(gen, "tp"), (Groups{{8, 9}, {10, 11}}));
}

TEST(MegatronGeneratorTest, TpPpDpOrderPipelineGroups) {
  // Order "tp-pp-dp": W=16 TP=2 PP=2 EP=2 ETP=1; dense and expert PP groups agree.
  RankGenerator dense = Gen(2, 1, 4, 2, 1, "tp-cp-ep-pp-dp");
  RankGenerator expert = Gen(1, 2, 4, 2, 1, "tp-cp-ep-pp-dp");
  EXPECT_EQ(Ranks(dense, "pp"), Ranks(expert, "pp"));
  EXPECT_EQ(Ranks(dense, "pp")[2], (std::vector<int>{4, 6}));
  EXPECT_EQ(Ranks(expert, "ep")[1], (std::vector<int>{2, 3}));
  EXPECT_EQ(Ranks(expert, "dp")[0], (std::vector<int>{0, 4, 8, 12}));
  // "tp-pp-dp FAIL": EP=4 -> expert PP [0,4] vs dense PP [0,2].
  RankGenerator expert4 = Gen(1, 4, 2, 2, 1, "tp-cp-ep-pp-dp");
  EXPECT_EQ(Ranks(expert4, "pp")[0], (std::vector<int>{0, 4}));
  EXPECT_NE(Ranks(dense, "pp"), Ranks(expert4, "pp"));
  // ... and likewise ETP=2, EP=2 (TP*CP = 2 != ETP*EP = 4).
  EXPECT_NE(Ranks(dense, "pp"), Ranks(Gen(2, 2, 2, 2, 1, "tp-cp-ep-pp-dp"), "pp"));
}

TEST(MegatronLayoutTest, CaseA) {
  GroupTables t = Megatron(Moe(8, 2, 4));
  EXPECT_EQ(t.expert_layout, ExpertLayout::kFolding);
  EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6] [1,3,5,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,1,2,3] [4,5,6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,4] [1,5] [2,6] [3,7]"));
  EXPECT_FALSE(t.groups.count(GroupKind::kSp));
  EXPECT_FALSE(t.groups.count(GroupKind::kPp));
  // Per-rank coordinates of the table: rank 6 has tp 0, dp 3, ep 2, edp 1.
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEp), 6), G("[4,5,6,7]"));
  EXPECT_EQ(GroupsContaining(Kind(t, GroupKind::kEdp), 6), G("[2,6]"));
}

TEST(MegatronLayoutTest, CaseA2EtpEqualTpReproducesLegacy) {
  ParallelSizes s = Moe(8, 2, 4);
  s.etp = 2;
  GroupTables t = Megatron(s);
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0,2,4,6] [1,3,5,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), Singletons(8));
  // Same tables as DeepSpeed's Megatron-mpu path (D), the legacy "EP inside DP" layout.
  GroupTables d = Build(Moe(8, 2, 4), RankLayout::kDeepSpeed, ExpertLayout::kMegatronMpu);
  EXPECT_EQ(Kind(t, GroupKind::kEp), Kind(d, GroupKind::kEp));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), Kind(d, GroupKind::kEdp));
}

TEST(MegatronLayoutTest, CaseB) {
  GroupTables t = Megatron(Moe(16, 4, 8));
  EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0-3] [4-7] [8-11] [12-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0..7] [8..15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]"));
}

TEST(MegatronLayoutTest, CaseC) {
  GroupTables t = Megatron(Moe(8, 4, 4));
  EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0,1,2,3] [4,5,6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,4] [1,5] [2,6] [3,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), Kind(t, GroupKind::kTp));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), Kind(t, GroupKind::kDp));
}

TEST(MegatronLayoutTest, CaseDContextParallelWithExperts) {
  ParallelSizes s = Moe(8, 2, 4);
  s.sp = 2;
  GroupTables t = Megatron(s);
  EXPECT_EQ(Kind(t, GroupKind::kTp), G("[0,1] [2,3] [4,5] [6,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0,2] [1,3] [4,6] [5,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,4] [1,5] [2,6] [3,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kSpDp), G("[0,2,4,6] [1,3,5,7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0-3] [4-7]"));  // = TP-CP
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,4] [1,5] [2,6] [3,7]"));
}

TEST(MegatronLayoutTest, CaseEWithPipeline) {
  GroupTables t = Megatron(Moe(16, 2, 4, 2));
  EXPECT_EQ(Kind(t, GroupKind::kPp), G("[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), G("[0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0-3] [4-7] [8-11] [12-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]"));
}

TEST(MegatronLayoutTest, CasesFGAndBridge) {
  ParallelSizes f = Moe(8, 1, 8);
  f.sp = 8;
  GroupTables t = Megatron(f);
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0..7]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0..7]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp), Singletons(8));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), Singletons(8));

  ParallelSizes g = Moe(16, 2, 4, 2);
  g.sp = 2;
  t = Megatron(g);
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0,2] [1,3] [4,6] [5,7] [8,10] [9,11] [12,14] [13,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0-3] [4-7] [8-11] [12-15]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), G("[0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]"));
  EXPECT_EQ(Kind(t, GroupKind::kPp), G("[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]"));

  ParallelSizes bridge = Moe(32, 1, 32);  // Megatron-Bridge #4980: CP=16, EP=32 > DP=2
  bridge.sp = 16;
  t = Megatron(bridge);
  EXPECT_EQ(Kind(t, GroupKind::kSp), G("[0-15] [16-31]"));
  EXPECT_EQ(Kind(t, GroupKind::kDp).front(), (RankGroup{0, 16}));
  EXPECT_EQ(Kind(t, GroupKind::kEp), G("[0..31]"));
  EXPECT_EQ(Kind(t, GroupKind::kEdp), Singletons(32));
}

TEST(MegatronLayoutTest, ContextParallelMatchesUlyssesWhenTpIsOne) {
  // Megatron CP: W=8, TP=1, CP=4 gives exactly the Ulysses groups.
  ParallelSizes s;
  s.world = 8;
  s.sp = 4;
  GroupTables m = Megatron(s);
  GroupTables d = Build(s);
  EXPECT_EQ(m.groups, d.groups);
  EXPECT_EQ(Kind(m, GroupKind::kSp), G("[0-3] [4-7]"));
  EXPECT_EQ(Kind(m, GroupKind::kDp), G("[0,4] [1,5] [2,6] [3,7]"));
  EXPECT_EQ(Kind(m, GroupKind::kSpDp), G("[0..7]"));
}

TEST(MegatronLayoutTest, RejectsDeepSpeedExpertPaths) {
  Result<GroupTables> t =
      BuildGroupTables(Moe(8, 2, 4), RankLayout::kMegatron, ExpertLayout::kLaneMajor);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message,
            "expert layout 'lane-major' is a DeepSpeed code path; the Megatron layout always "
            "folds (use 'auto' or 'folding')");
  EXPECT_TRUE(BuildGroupTables(Moe(8, 2, 4), RankLayout::kMegatron, ExpertLayout::kFolding).ok());
}

}  // namespace
}  // namespace dsp
