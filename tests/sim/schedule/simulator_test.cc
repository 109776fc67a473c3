// SPDX-License-Identifier: Apache-2.0
// The simulator on hand-made programs with hand-checkable times (two ranks, one data-parallel
// group, a link of 1 GB/s busbw without latency), overlap on and off, a slow rank delaying its
// group, memory accounting, and symmetric versus full simulation on real plans.
#include "sim/schedule/simulator.h"

#include <gtest/gtest.h>

#include "sim/cost/memory_model.h"
#include "tests/sim/schedule/schedule_test_util.h"

namespace dsp::sim::schedule {
namespace {

using testing::ScheduleCase;

// Two ranks, one dp group [0, 1]; every collective link 1e9 B/s busbw, no latency.
struct TwoRanks {
  Plan plan;
  ModelSpec model = dsp::testing::ParsePresetOrDie("tiny-llama.json");
  Cluster cluster;
  SimInput input;
  TwoRanks() {
    PlanInputs in;
    in.world_size = 2;
    plan = BuildPlan(Json::parse(R"({"train_batch_size": 2})"), in).value();
    cluster.gpus_per_node = 8;
    cluster.intra_node = {1e9, 0};
    cluster.inter_node = {1e9, 0};
    input.plan = &plan;
    input.model = &model;
    input.cluster = &cluster;
  }
};

Task Compute(std::string name, double seconds, std::vector<int> deps = {}) {
  Task t;
  t.name = std::move(name);
  t.compute_seconds = seconds;
  t.deps = std::move(deps);
  return t;
}

// All-reduce of 0.5 GB over 2 ranks: busbw factor 2(n-1)/n = 1, so 0.5 s.
Task AllReduce(std::string name, std::vector<int> deps, int stream) {
  Task t;
  t.name = std::move(name);
  t.collective = true;
  t.kind = CollectiveKind::kAllReduce;
  t.group = GroupKind::kDp;
  t.bytes = 0.5e9;
  t.stream = stream;
  t.deps = std::move(deps);
  return t;
}

// A (1 s) -> all-reduce B -> D (1 s); C (2 s) independent, issued before D.
Program Diamond(int reduce_stream) {
  Program p;
  p.tasks = {Compute("A", 1), AllReduce("B", {0}, reduce_stream), Compute("C", 2), Compute("D", 1, {1})};
  return p;
}

void ExpectTimes(const RankTimeline& tl, std::vector<std::pair<double, double>> expected) {
  ASSERT_EQ(tl.times.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(tl.times[i].start, expected[i].first) << "task " << i;
    EXPECT_DOUBLE_EQ(tl.times[i].end, expected[i].second) << "task " << i;
  }
}

TEST(SimulatorTest, OverlappedAllReduceHidesBehindCompute) {
  TwoRanks f;
  auto s = Simulate(Diamond(StreamOf(GroupKind::kDp)), f.input);
  ASSERT_TRUE(s.ok()) << s.error().message;
  // B runs on the dp stream while C computes; D waits for C (stream order) and B.
  ExpectTimes(s->Of(0), {{0, 1}, {1, 1.5}, {1, 3}, {3, 4}});
  EXPECT_DOUBLE_EQ(s->step_seconds, 4);
  EXPECT_EQ(s->representative.size(), 1u);  // both ranks behave the same: one class
}

TEST(SimulatorTest, AllReduceOnTheComputeStreamSerializes) {
  TwoRanks f;
  auto s = Simulate(Diamond(kComputeStream), f.input);
  ASSERT_TRUE(s.ok());
  ExpectTimes(s->Of(1), {{0, 1}, {1, 1.5}, {1.5, 3.5}, {3.5, 4.5}});
  EXPECT_DOUBLE_EQ(s->step_seconds, 4.5);
}

// Two collectives on the same link take turns (0.5 s each: the second ends at 1 s) even on separate
// streams; a compute task between them on the link's timeline leaves the link free.
TEST(SimulatorTest, CollectivesOnOneLinkTakeTurns) {
  TwoRanks f;
  Program p;
  p.tasks = {AllReduce("X", {}, StreamOf(GroupKind::kDp)), AllReduce("Y", {}, ReduceStreamOf(GroupKind::kDp)),
             Compute("C", 0.25)};
  auto s = Simulate(p, f.input);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const RankTimeline& r = s->Of(0);
  EXPECT_DOUBLE_EQ(r.times[0].start, 0.0);
  EXPECT_DOUBLE_EQ(r.times[0].end, 0.5);
  EXPECT_DOUBLE_EQ(r.times[1].end, 1.0);   // waited for X's half second of link time
  EXPECT_DOUBLE_EQ(r.times[2].end, 0.25);  // compute does not use the link
  EXPECT_DOUBLE_EQ(s->step_seconds, 1.0);
}

// A collective ready while an earlier one holds the link runs in the gaps it leaves: Y (0.5 s of
// link time, ready at 0) uses [0, 0.25) before X starts at 0.25 and the rest after X ends.
TEST(SimulatorTest, ALaterCollectiveUsesTheGapsTheEarlierOnesLeave) {
  TwoRanks f;
  Program p;
  p.tasks = {Compute("A", 0.25), AllReduce("X", {0}, StreamOf(GroupKind::kDp)),
             AllReduce("Y", {}, ReduceStreamOf(GroupKind::kDp))};
  auto s = Simulate(p, f.input);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const RankTimeline& r = s->Of(0);
  EXPECT_DOUBLE_EQ(r.times[1].start, 0.25);
  EXPECT_DOUBLE_EQ(r.times[1].end, 0.75);
  EXPECT_DOUBLE_EQ(r.times[2].start, 0.0);
  EXPECT_DOUBLE_EQ(r.times[2].end, 1.0);  // 0.25 s before X, 0.25 s after it
}

TEST(SimulatorTest, ASlowRankDelaysItsGroup) {
  TwoRanks f;
  SimulateOptions o;
  o.slow_ranks = {{1, 2.0}};
  auto s = Simulate(Diamond(StreamOf(GroupKind::kDp)), f.input, o);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->representative.size(), 2u);
  // Rank 1 computes A in 2 s; the all-reduce starts when both are ready, at 2 s, on both ranks.
  ExpectTimes(s->Of(1), {{0, 2}, {2, 2.5}, {2, 6}, {6, 8}});
  ExpectTimes(s->Of(0), {{0, 1}, {2, 2.5}, {1, 3}, {3, 4}});
  EXPECT_DOUBLE_EQ(s->step_seconds, 8);
  // Full simulation gives the same times.
  o.full = true;
  auto full = Simulate(Diamond(StreamOf(GroupKind::kDp)), f.input, o);
  ASSERT_TRUE(full.ok());
  ExpectTimes(full->Of(0), {{0, 1}, {2, 2.5}, {1, 3}, {3, 4}});
  ExpectTimes(full->Of(1), {{0, 2}, {2, 2.5}, {2, 6}, {6, 8}});
}

TEST(SimulatorTest, MemoryFollowsAllocationsAndFrees) {
  TwoRanks f;
  Program p = Diamond(StreamOf(GroupKind::kDp));
  p.static_bytes = 100;
  p.buffer_bytes = 10;
  p.tasks[0].alloc_at_end = 50;     // A saves 50 at t=1
  p.tasks[1].alloc_at_start = 20;   // B's buffer from 1 to 1.5
  p.tasks[1].alloc_at_end = -20;
  p.tasks[3].alloc_at_end = -50;    // D frees A's 50 at t=4
  auto s = Simulate(p, f.input);
  ASSERT_TRUE(s.ok());
  const RankTimeline& tl = s->Of(0);
  EXPECT_DOUBLE_EQ(tl.peak_bytes, 180);
  EXPECT_DOUBLE_EQ(tl.peak_at, 1);
  EXPECT_EQ(tl.memory, (std::vector<std::pair<double, double>>{{0, 110}, {1, 180}, {1.5, 160}, {4, 110}}));
}

TEST(SimulatorTest, RejectsSlowRanksOutsideTheWorld) {
  TwoRanks f;
  SimulateOptions o;
  o.slow_ranks = {{2, 2.0}};
  auto s = Simulate(Diamond(kComputeStream), f.input, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "slow rank 2 is outside the world (0-1)");
  o.slow_ranks = {{1, 0.0}};
  EXPECT_FALSE(Simulate(Diamond(kComputeStream), f.input, o).ok());
}

// Symmetric and full simulation agree task by task on real plans, including ones whose groups
// sit differently on the nodes: on nodes of 3 GPUs the tp pair [2, 3] crosses a node boundary
// and [0, 1] does not, so the ranks fall into several classes.
TEST(SimulatorTest, SymmetricAndFullSimulationAgree) {
  for (int gpus_per_node : {8, 2, 3}) {
    ScheduleCase c("folding-tp2-ep4.json", 8, gpus_per_node, "mixtral-8x7b.json");
    auto sym = Simulate(c.program, c.input());
    auto full = Simulate(c.program, c.input(), {.full = true, .slow_ranks = {}});
    ASSERT_TRUE(sym.ok() && full.ok());
    if (gpus_per_node == 3) {
      EXPECT_GT(sym->representative.size(), 1u);
    } else if (gpus_per_node == 8) {
      EXPECT_EQ(sym->representative.size(), 1u);
    }
    ASSERT_TRUE(sym.ok() && full.ok());
    EXPECT_EQ(full->representative.size(), 8u);
    EXPECT_DOUBLE_EQ(sym->step_seconds, full->step_seconds);
    for (int r = 0; r < 8; ++r) {
      for (size_t i = 0; i < c.program.tasks.size(); ++i) {
        ASSERT_DOUBLE_EQ(sym->Of(r).times[i].end, full->Of(r).times[i].end) << "rank " << r << " task " << i;
      }
      EXPECT_DOUBLE_EQ(sym->Of(r).peak_bytes, full->Of(r).peak_bytes);
    }
  }
}

TEST(SimulatorTest, HomogeneousPlansCollapseToOneClass) {
  dsp::testing::SimCase big(Json::parse(R"({"train_batch_size": 2048, "tensor_parallel": {"autotp_size": 8}})"),
                            16384, 8, "llama-3-70b.json");
  const std::vector<int> classes = RankClasses(big.input, {});
  ASSERT_EQ(classes.size(), 16384u);
  EXPECT_EQ(*std::max_element(classes.begin(), classes.end()), 0);
  // A straggler splits its class off, and its dp group mates from the rest.
  const std::vector<int> slow = RankClasses(big.input, {{5, 1.2}});
  EXPECT_NE(slow[5], slow[0]);
  EXPECT_NE(slow[13], slow[0]);  // rank 13 shares rank 5's dp group (dp groups stride by tp = 8)
  EXPECT_EQ(slow[0], slow[1]);
}

// The issue's bar: the simulated memory peak within 5% of the cost model's on the samples.
TEST(SimulatorTest, MemoryPeakAgreesWithTheCostModel) {
  struct Sample {
    const char* config;
    int world;
    const char* model;
    int64_t accum;
  };
  for (const Sample& s : {Sample{"autosp-sp4.json", 8, "llama-3-8b.json", 2},
                          Sample{"autotp-layer-specs.json", 8, "llama-3-8b.json", 1},
                          Sample{"folding-tp2-ep4.json", 8, "mixtral-8x7b.json", 4},
                          Sample{"zero3-offload.json", 16, "llama-3-70b.json", 2}}) {
    ScheduleCase c(s.config, s.world, 8, s.model, 1, 4096, s.accum);
    auto sched = Simulate(c.program, c.input());
    ASSERT_TRUE(sched.ok()) << s.config;
    const double model_peak = EstimateMemory(c.input()).peak_bytes;
    EXPECT_NEAR(sched->Of(0).peak_bytes / model_peak, 1.0, 0.05) << s.config;
  }
}

}  // namespace
}  // namespace dsp::sim::schedule
