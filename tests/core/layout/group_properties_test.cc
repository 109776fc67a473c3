// SPDX-License-Identifier: Apache-2.0
// Sweeps over every shape with world <= 64 (divisor combinations of pp, tp, sp and ep): which
// shapes each layout accepts, the invariants every layout keeps and the closed forms
// (layout_checks.h), and identities between layouts: DeepSpeed's dense groups equal Megatron's
// wherever both exist, the engine's EP/EDP (A / B' / C) equal Megatron's with ETP=1, and path (D)
// equals Megatron with ETP=TP ("folding with ETP=TP and CP=1 reproduces legacy").
// The suite runs as a Debug build, so the rarer combinations are swept over fewer ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/layout/groups.h"
#include "tests/core/layout/layout_checks.h"

namespace dsp {
namespace {

using testing::CheckTables;
using testing::ExpectedToAccept;
using testing::ExpertSizes;
using testing::Failures;
using testing::ForEachDenseShape;

constexpr int kMaxWorld = 64;

// Builds, checks acceptance against the documented rules, and checks every invariant.
Result<GroupTables> BuildAndCheck(const ParallelSizes& s, RankLayout layout, ExpertLayout expert,
                                  Failures& f, const GroupTables* dense_reference = nullptr) {
  f.SetContext(s, layout, expert);
  Result<GroupTables> t = BuildGroupTables(s, layout, expert);
  if (t.ok() != ExpectedToAccept(s, layout, expert)) {
    f.Add(t.ok() ? "accepted unexpectedly" : "rejected: " + t.error().message);
  } else if (t.ok()) {
    CheckTables(s, *t, f, dense_reference);
  }
  return t;
}

void ExpectSame(const GroupTables& a, const GroupTables& b, std::initializer_list<GroupKind> kinds,
                Failures& f) {
  for (GroupKind kind : kinds) {
    auto ia = a.groups.find(kind), ib = b.groups.find(kind);
    const bool same = (ia == a.groups.end()) == (ib == b.groups.end()) &&
                      (ia == a.groups.end() || ia->second == ib->second);
    if (!same) f.Add(std::string(GroupKindName(kind)) + " differs between layouts");
  }
}

constexpr std::initializer_list<GroupKind> kDense = {GroupKind::kTp, GroupKind::kDp, GroupKind::kSp,
                                                     GroupKind::kSpDp, GroupKind::kPp};

TEST(GroupPropertiesTest, EngineAndMegatronLayoutsUpTo64Ranks) {
  // Every (pp, tp, sp) without experts and every (pp, tp, sp, ep) with AutoEP for the DeepSpeed
  // engine's layout; Megatron likewise, with sp = 1 once experts are on (its expert generator has
  // cp = 1, so sp only changes the dense groups; CP x EP is swept up to 32 ranks below). Tables
  // with experts compare their dense groups with the already checked table without experts.
  Failures f;
  ForEachDenseShape(kMaxWorld, [&](ParallelSizes s) {
    Result<GroupTables> ds0 = BuildAndCheck(s, RankLayout::kDeepSpeed, ExpertLayout::kAuto, f);
    Result<GroupTables> mg0 = BuildAndCheck(s, RankLayout::kMegatron, ExpertLayout::kAuto, f);
    if (ds0.ok() && mg0.ok()) ExpectSame(*ds0, *mg0, kDense, f);
    s.expert_parallel = true;
    for (int ep : ExpertSizes(s)) {
      s.ep = ep;
      Result<GroupTables> ds = BuildAndCheck(s, RankLayout::kDeepSpeed, ExpertLayout::kAuto, f,
                                             ds0.ok() ? &*ds0 : nullptr);
      if (s.sp != 1) continue;
      Result<GroupTables> mg =
          BuildAndCheck(s, RankLayout::kMegatron, ExpertLayout::kAuto, f, &*mg0);
      // The engine's EP/EDP -- (A), (B') or folding (C) -- equal Megatron's with ETP = 1.
      if (ds.ok() && mg.ok()) ExpectSame(*ds, *mg, {GroupKind::kEp, GroupKind::kEdp}, f);
    }
  });
  EXPECT_EQ(f.count, 0) << f.Report();
  EXPECT_GT(f.checked, 8000);
}

TEST(GroupPropertiesTest, MegatronContextAndExpertsUpTo32Ranks) {
  // The full (pp, tp, cp, ep) cross product for Megatron, including TP x CP x EP.
  Failures f;
  ForEachDenseShape(32, [&](ParallelSizes s) {
    if (s.sp == 1) return;  // covered above
    Result<GroupTables> mg0 = BuildAndCheck(s, RankLayout::kMegatron, ExpertLayout::kAuto, f);
    if (!mg0.ok()) return;
    s.expert_parallel = true;
    for (int ep : ExpertSizes(s)) {
      s.ep = ep;
      (void)BuildAndCheck(s, RankLayout::kMegatron, ExpertLayout::kAuto, f, &*mg0);
    }
  });
  EXPECT_EQ(f.count, 0) << f.Report();
  EXPECT_GT(f.checked, 1000);
}

TEST(GroupPropertiesTest, EngineFlagsUpTo32Ranks) {
  // use_data_before_expert_parallelism and expert_tensor_parallel_size = tp: which shapes the
  // engine accepts ((A') only without TP and SP; ETP != 1 never) and Megatron's ETP = TP tables.
  Failures f;
  ForEachDenseShape(32, [&](ParallelSizes s) {
    s.expert_parallel = true;
    for (int ep : ExpertSizes(s)) {
      s.ep = ep;
      s.data_before_expert = true;
      (void)BuildAndCheck(s, RankLayout::kDeepSpeed, ExpertLayout::kAuto, f);
      s.data_before_expert = false;
      if (s.tp > 1 && (s.world / s.pp) % (ep * s.tp) == 0) {
        s.etp = s.tp;
        (void)BuildAndCheck(s, RankLayout::kDeepSpeed, ExpertLayout::kAuto, f);
        (void)BuildAndCheck(s, RankLayout::kMegatron, ExpertLayout::kAuto, f);
        s.etp = 1;
      }
    }
  });
  EXPECT_EQ(f.count, 0) << f.Report();
  EXPECT_GT(f.checked, 500);
}

TEST(GroupPropertiesTest, ExplicitExpertPathsUpTo12Ranks) {
  // Every explicit path through the public API on the full cross product; the paths themselves
  // are swept up to 32 ranks in expert_paths_test.cc. (D) also equals Megatron with ETP = TP.
  Failures f;
  const ExpertLayout paths[] = {ExpertLayout::kExpertsFirst, ExpertLayout::kDataFirst,
                                ExpertLayout::kLaneMajor, ExpertLayout::kFolding,
                                ExpertLayout::kMegatronMpu};
  ForEachDenseShape(12, [&](ParallelSizes s) {
    s.expert_parallel = true;
    for (int ep : ExpertSizes(s)) {
      s.ep = ep;
      for (bool data_before : {false, true}) {
        s.data_before_expert = data_before;
        for (ExpertLayout path : paths) {
          Result<GroupTables> t = BuildAndCheck(s, RankLayout::kDeepSpeed, path, f);
          if (path == ExpertLayout::kMegatronMpu && !data_before && t.ok()) {
            ParallelSizes m = s;
            m.etp = s.tp;
            Result<GroupTables> mg =
                BuildAndCheck(m, RankLayout::kMegatron, ExpertLayout::kAuto, f);
            if (mg.ok()) ExpectSame(*t, *mg, {GroupKind::kEp, GroupKind::kEdp}, f);
          }
        }
      }
    }
  });
  EXPECT_EQ(f.count, 0) << f.Report();
  EXPECT_GT(f.checked, 1000);
}

TEST(GroupPropertiesTest, TpAndDpMeetInExactlyOneRank) {
  // The orthogonality invariant spelled out pair by pair on one shape per layout.
  for (RankLayout layout : {RankLayout::kDeepSpeed, RankLayout::kMegatron}) {
    ParallelSizes s;
    s.world = 48;
    s.tp = 4;
    s.pp = 3;
    Result<GroupTables> t = BuildGroupTables(s, layout);
    ASSERT_TRUE(t.ok());
    const int stage = 16;
    for (const RankGroup& tp : t->groups.at(GroupKind::kTp)) {
      for (const RankGroup& dp : t->groups.at(GroupKind::kDp)) {
        int common = 0;
        for (int r : tp) common += static_cast<int>(std::count(dp.begin(), dp.end(), r));
        EXPECT_EQ(common, tp[0] / stage == dp[0] / stage ? 1 : 0);
      }
    }
  }
}

TEST(GroupPropertiesTest, ChecksCatchABrokenTable) {
  // The checker itself: a table with two ranks swapped between groups must be reported.
  ParallelSizes s;
  s.world = 8;
  s.tp = 2;
  Result<GroupTables> t = BuildGroupTables(s);
  ASSERT_TRUE(t.ok());
  std::swap(t->groups[GroupKind::kTp][0][1], t->groups[GroupKind::kTp][1][0]);
  Failures f;
  CheckTables(s, *t, f);
  EXPECT_GT(f.count, 0);
}

}  // namespace
}  // namespace dsp
