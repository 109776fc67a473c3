// SPDX-License-Identifier: Apache-2.0
// The schedule draws cpu_checkpointing's host copies on their streams (PR #8282's side streams
// from DeepSpeed 0.19.6, the compute stream before) and runs ZeRO++'s collectives on the groups
// DeepSpeed carves out of the global ranks.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost/memory_model.h"
#include "sim/render/schedule_svg.h"
#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"
#include "tests/sim/schedule/schedule_test_util.h"

namespace dsp::sim::schedule {
namespace {

using testing::Count;
using testing::ScheduleCase;

ScheduleCase::InlineConfig Inline(const char* json) { return {dsp::testing::ParseJsonOrDie(json)}; }

struct SimulatedStep {
  Program program;
  Schedule schedule;
};

SimulatedStep Simulated(ScheduleCase& c, const CheckpointSettings& ckpt) {
  c.sim->input.workload.recompute = Recompute::kFull;
  c.sim->input.checkpointing = ckpt;
  auto p = BuildProgram(c.graph, c.input());
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  auto s = Simulate(*p, c.input());
  EXPECT_TRUE(s.ok());
  return {std::move(p).value(), std::move(s).value()};
}

TEST(CheckpointOffloadScheduleTest, AsyncCopiesRunBesideComputeAndBlockingOnesOnIt) {
  ScheduleCase c(Inline(R"({"zero_optimization": {"stage": 1}})"), 8, 8,
                 "llama-3-8b.json", 4, 4096, 1);
  const SimulatedStep none = Simulated(c, {});
  const SimulatedStep async = Simulated(c, {.cpu_checkpointing = true, .async_copy = true});
  const SimulatedStep blocking = Simulated(c, {.cpu_checkpointing = true, .async_copy = false});
  auto copies = [](const Program& p, const char* prefix, int stream) {
    return Count(p, [&](const Task& t) { return t.host_copy && t.name.starts_with(prefix) && t.stream == stream; });
  };
  // Keep-last: 31 of 32 layer inputs leave with the offload engine; all 32 before it.
  EXPECT_EQ(copies(async.program, "offload layer", kDeviceToHostStream), 31);
  EXPECT_EQ(copies(async.program, "reload layer", kHostToDeviceStream), 31);
  EXPECT_EQ(copies(blocking.program, "offload layer", kComputeStream), 32);
  EXPECT_EQ(copies(blocking.program, "reload layer", kComputeStream), 32);
  // One layer input is 2 T h bytes (4 x 4096 tokens); each crosses PCIe both ways: pinned at the
  // test cluster's 55 GB/s with the offload engine, pageable (55 / 6 GB/s) before it.
  const double layer = 2.0 * 4 * 4096 * 4096, pcie = 55e9, pageable = pcie / 6;
  EXPECT_NEAR(blocking.schedule.step_seconds - none.schedule.step_seconds, 2 * 32 * layer / pageable,
              0.02 * 2 * 32 * layer / pageable);
  EXPECT_LT(async.schedule.step_seconds - none.schedule.step_seconds, 0.1 * 2 * 31 * layer / pcie);
  // The device peak falls by about the inputs that went to the host.
  const double saved = none.schedule.Of(0).peak_bytes - async.schedule.Of(0).peak_bytes;
  EXPECT_GT(saved, 25 * layer);
  EXPECT_LE(saved, 31 * layer + 1);
  // The timeline draws both copy streams and the step without the copies as a dashed curve.
  const std::string svg = render::ScheduleToSvg(async.program, async.schedule, {0}, "t",
                                                {&none.schedule, "without cpu_checkpointing"});
  EXPECT_NE(svg.find(">copy d2h<"), std::string::npos);
  EXPECT_NE(svg.find(">copy h2d<"), std::string::npos);
  EXPECT_NE(svg.find("class=\"memory-baseline\""), std::string::npos);
  EXPECT_NE(svg.find("without cpu_checkpointing"), std::string::npos);
}

TEST(ZeroPlusPlusScheduleTest, HpzGathersStayInTheNodeAfterTheFirstForward) {
  const Json config = dsp::testing::ParseJsonOrDie(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}})");
  ScheduleCase hpz(ScheduleCase::InlineConfig{config}, 16, 8, "llama-3-8b.json", 1, 4096, 2);
  ScheduleCase plain(Inline(R"({"zero_optimization": {"stage": 3}})"), 16, 8,
                     "llama-3-8b.json", 1, 4096, 2);
  auto gathers = [](const Program& p, bool carved) {
    return Count(p, [&](const Task& t) {
      return t.collective && t.kind == CollectiveKind::kAllGather && (t.block == 8) == carved;
    });
  };
  const int all = gathers(plain.program, false);
  ASSERT_GT(all, 0);
  // Two micro-steps: the first forward's gathers (a quarter of forward + backward, twice) go to
  // all 16 ranks, every other gather reads the secondary partition inside the node.
  EXPECT_EQ(gathers(hpz.program, false), all / 4);
  EXPECT_EQ(gathers(hpz.program, true), all - all / 4);
  auto a = Simulate(plain.program, plain.input()), b = Simulate(hpz.program, hpz.input());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LE(b->step_seconds, a->step_seconds);
}

TEST(ZeroPlusPlusScheduleTest, QgzReducesEachBucketWithTwoAllToAlls) {
  const Json config = dsp::testing::ParseJsonOrDie(R"({"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}})");
  ScheduleCase c(ScheduleCase::InlineConfig{config}, 16, 8, "llama-3-8b.json", 1, 4096, 1);
  const int intra = Count(c.program, [](const Task& t) { return t.name.starts_with("qgz intra-node"); });
  const int inter = Count(c.program, [](const Task& t) {
    return t.name.starts_with("qgz inter-node") && t.strided && t.block == 8;
  });
  EXPECT_GT(intra, 0);
  EXPECT_EQ(intra, inter);
  EXPECT_EQ(Count(c.program, [](const Task& t) { return t.kind == CollectiveKind::kReduceScatter && t.collective; }), 0);
  EXPECT_TRUE(Simulate(c.program, c.input()).ok());
}

}  // namespace
}  // namespace dsp::sim::schedule
