// SPDX-License-Identifier: Apache-2.0
// The comparison behind `ds-plan check`, on hand-written snapshots: exact groups and integers,
// floats against the tolerance, one-sided values, and the config leaf diff.
#include "sim/plan/diff.h"

#include <cmath>

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

Json Snapshot() {
  return Json::parse(R"({
    "schema_version": 1,
    "inputs": {"config": {"path": "a.json"}},
    "resolved": {"world_size": 8, "grad_accum": 4},
    "layout": {"tp": 2, "dp": 4, "zero_stage": 1},
    "groups": {"rank_layout": "deepspeed",
               "tables": {"tp": [[0,1],[2,3],[4,5],[6,7]], "dp": [[0,2,4,6],[1,3,5,7]]}},
    "memory": {"peak_bytes": 1000.0, "fits": true},
    "time": {"step_seconds": 2.0, "mfu": 0.0},
    "collectives": {"all_reduce": {"dp": {"bytes_per_step": 100.0}}}
  })");
}

const PlanDifference* Find(const PlanComparison& c, const std::string& field) {
  for (const auto& d : c.differences) {
    if (d.field == field) return &d;
  }
  return nullptr;
}

TEST(PlanDiff, IdenticalSnapshotsHaveNoDifferences) {
  auto c = ComparePlanSnapshots(Snapshot(), Snapshot(), 1.0);
  EXPECT_TRUE(c.differences.empty());
  EXPECT_EQ(c.failures(), 0u);
}

TEST(PlanDiff, InputsAreNotCompared) {
  Json fresh = Snapshot();
  fresh["inputs"]["config"]["path"] = "b.json";
  fresh["schema_version"] = 2;
  EXPECT_TRUE(ComparePlanSnapshots(Snapshot(), fresh, 1.0).differences.empty());
}

TEST(PlanDiff, GroupTableChangeNamesKindShapeAndFirstDifferingGroup) {
  Json fresh = Snapshot();
  fresh["groups"]["tables"]["tp"] = Json::parse("[[0,1,2,3],[4,5,6,7]]");
  fresh["groups"]["tables"]["dp"] = Json::parse("[[0,4],[1,5],[2,6],[3,7]]");
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 1.0);
  ASSERT_EQ(c.failures(), 2u);
  const auto* tp = Find(c, "groups.tables.tp");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->detail, "4 groups of 2 -> 2 groups of 4; first difference: group 0 [0,1] -> [0-3]");
  const auto* dp = Find(c, "groups.tables.dp");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->detail, "2 groups of 4 -> 4 groups of 2; first difference: group 0 [0,2,4,6] -> [0,4]");
}

TEST(PlanDiff, SameShapeDifferentMembersShowsTheLaterGroup) {
  Json fresh = Snapshot();
  fresh["groups"]["tables"]["tp"] = Json::parse("[[0,1],[2,3],[4,6],[5,7]]");
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 1.0);
  const auto* d = Find(c, "groups.tables.tp");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->detail, "4 groups of 2 -> 4 groups of 2; first difference: group 2 [4,5] -> [4,6]");
}

TEST(PlanDiff, AppearingAndDisappearingGroupKinds) {
  Json fresh = Snapshot();
  fresh["groups"]["tables"].erase("tp");
  fresh["groups"]["tables"]["ep"] = Json::parse("[[0,1,2,3],[4,5,6,7]]");
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 1.0);
  const auto* tp = Find(c, "groups.tables.tp");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->detail, "4 groups of 2 -> absent");
  EXPECT_TRUE(tp->new_value.is_null());
  const auto* ep = Find(c, "groups.tables.ep");
  ASSERT_NE(ep, nullptr);
  EXPECT_EQ(ep->detail, "absent -> 2 groups of 4");
  EXPECT_EQ(c.failures(), 2u);
}

TEST(PlanDiff, IntegersMustBeEqualWhateverTheTolerance) {
  Json fresh = Snapshot();
  fresh["layout"]["zero_stage"] = 2;
  fresh["resolved"]["world_size"] = 9;
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 50.0);
  EXPECT_EQ(c.failures(), 2u);
  const auto* z = Find(c, "layout.zero_stage");
  ASSERT_NE(z, nullptr);
  EXPECT_FALSE(z->relative_change.has_value());
  EXPECT_EQ(z->old_value, 1);
  EXPECT_EQ(z->new_value, 2);
}

TEST(PlanDiff, FloatsWithinToleranceAreKeptButDoNotFail) {
  Json fresh = Snapshot();
  fresh["memory"]["peak_bytes"] = 1009.0;  // +0.9%
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 1.0);
  ASSERT_EQ(c.differences.size(), 1u);
  EXPECT_TRUE(c.differences[0].within_tolerance);
  EXPECT_NEAR(*c.differences[0].relative_change, 0.009, 1e-12);
  EXPECT_EQ(c.failures(), 0u);
}

TEST(PlanDiff, FloatsBeyondToleranceFailInBothDirections) {
  Json fresh = Snapshot();
  fresh["memory"]["peak_bytes"] = 1011.0;  // +1.1%
  fresh["time"]["step_seconds"] = 1.9;     // -5%
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 1.0);
  EXPECT_EQ(c.failures(), 2u);
  EXPECT_NEAR(*Find(c, "time.step_seconds")->relative_change, -0.05, 1e-12);
  // The tolerance is inclusive: exactly 5% passes at 5%.
  EXPECT_EQ(ComparePlanSnapshots(Snapshot(), fresh, 5.0).failures(), 0u);
  EXPECT_EQ(ComparePlanSnapshots(Snapshot(), fresh, 0.0).failures(), 2u);
}

TEST(PlanDiff, AnyChangeFromZeroFails) {
  Json fresh = Snapshot();
  fresh["time"]["mfu"] = 1e-9;
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 100.0);
  ASSERT_EQ(c.failures(), 1u);
  EXPECT_TRUE(std::isinf(*c.differences[0].relative_change));
}

TEST(PlanDiff, BooleansAndStringsAreExact) {
  Json fresh = Snapshot();
  fresh["memory"]["fits"] = false;
  fresh["groups"]["rank_layout"] = "megatron";
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 100.0);
  EXPECT_EQ(c.failures(), 2u);
  EXPECT_NE(Find(c, "memory.fits"), nullptr);
  EXPECT_NE(Find(c, "groups.rank_layout"), nullptr);
}

TEST(PlanDiff, OneSidedValuesAreDifferences) {
  Json fresh = Snapshot();
  fresh["collectives"]["all_to_all"]["ep"]["bytes_per_step"] = 5.0;
  fresh["collectives"].erase("all_reduce");
  auto c = ComparePlanSnapshots(Snapshot(), fresh, 1.0);
  ASSERT_EQ(c.failures(), 2u);
  // Reported per leaf, with the unit-bearing field name.
  const auto* added = Find(c, "collectives.all_to_all.ep.bytes_per_step");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->detail, "added");
  EXPECT_TRUE(added->old_value.is_null());
  EXPECT_EQ(added->new_value, 5.0);
  const auto* removed = Find(c, "collectives.all_reduce.dp.bytes_per_step");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(removed->detail, "removed");
  EXPECT_EQ(removed->old_value, 100.0);
}

TEST(PlanDiff, MissingSectionInTheRecordedSnapshotFails) {
  Json recorded = Snapshot();
  recorded.erase("memory");
  EXPECT_GE(ComparePlanSnapshots(recorded, Snapshot(), 1.0).failures(), 1u);
}

TEST(PlanDiff, ConfigLeafDiffUsesJsonPointers) {
  Json a = Json::parse(R"({"tensor_parallel": {"autotp_size": 2}, "a/b": 1, "keep": [1, 2], "gone": true})");
  Json b = Json::parse(R"({"tensor_parallel": {"autotp_size": 4}, "a/b": 2, "keep": [1, 2], "new": {"x": 1}})");
  auto changes = DiffJsonLeaves(a, b);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0].pointer, "/a~1b");
  EXPECT_EQ(changes[1].pointer, "/gone");
  EXPECT_TRUE(changes[1].new_absent);
  EXPECT_EQ(changes[2].pointer, "/new");
  EXPECT_TRUE(changes[2].old_absent);
  EXPECT_EQ(changes[2].new_value, Json::parse(R"({"x": 1})"));
  EXPECT_EQ(changes[3].pointer, "/tensor_parallel/autotp_size");
  EXPECT_EQ(changes[3].old_value, 2);
  EXPECT_EQ(changes[3].new_value, 4);
  EXPECT_TRUE(DiffJsonLeaves(a, a).empty());
}

TEST(PlanDiff, RankGroupsPrintLikeTheGroupsTable) {
  EXPECT_EQ(FormatRankGroup(Json::parse("[0,1,2,3]")), "[0-3]");
  EXPECT_EQ(FormatRankGroup(Json::parse("[0,1]")), "[0,1]");
  EXPECT_EQ(FormatRankGroup(Json::parse("[0,4,5,6,9]")), "[0,4-6,9]");
  EXPECT_EQ(FormatRankGroup(Json::parse("[3]")), "[3]");
}

}  // namespace
}  // namespace dsp::sim
