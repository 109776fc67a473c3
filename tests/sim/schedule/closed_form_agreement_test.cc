// SPDX-License-Identifier: Apache-2.0
// The closed form (sim/cost/step_time.cc) and the event schedule price every operator with one
// kernel-cost function (sim/cost/kernel_time.h), so their step times differ only by what the
// schedule simulates: overlap on streams, the links collectives share, issue order. On every
// sample config and every published run the schedule covers they agree within 5 %, or the case is
// an exception docs/schedule.md ("Schedule versus cost model") explains, checked here to stay
// within its stated bound.
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "core/util/file_io.h"
#include "sim/calibrate/measured_runs.h"
#include "sim/graph/builder.h"
#include "sim/passes/from_config.h"
#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"
#include "sim/session/evaluation.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::sim::schedule {
namespace {

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Cluster H100() {
  auto cluster = ParseCluster(Json::parse(ReadSource("samples/clusters/h100-sxm.json")));
  EXPECT_TRUE(cluster.ok());
  return cluster.ok() ? *cluster : Cluster{};
}

// The schedule's step for a rewritten graph of `model` under `config`, or 0 on an error.
double ScheduleSeconds(const ModelSpec& model, const Json& config, const Plan& plan, const SimInput& in) {
  auto graph = graph::BuildModelGraph(model);
  if (!graph.ok()) return 0;
  auto pipeline = passes::PipelineForConfig({.model = &model, .config = &config, .plan = &plan});
  if (!pipeline.ok() || !pipeline->Run(*graph).ok()) return 0;
  auto program = BuildProgram(*graph, in);
  EXPECT_TRUE(program.ok()) << (program.ok() ? "" : program.error().message);
  if (!program.ok()) return 0;
  auto schedule = Simulate(*program, in);
  return schedule.ok() ? schedule->step_seconds : 0;
}

struct SampleCase {
  const char* config;
  const char* model;
  int64_t world;
  double bound;  // |schedule / closed form - 1| at most
};

// The samples of the README and docs/schedule.md on the H100 preset.
const SampleCase kSamples[] = {
    {"autosp-sp4.json", "llama-3-8b.json", 8, 0.05},
    {"autotp-layer-specs.json", "llama-3-8b.json", 8, 0.05},
    {"folding-tp2-ep4.json", "mixtral-8x7b.json", 8, 0.05},
    {"cpu-checkpointing.json", "llama-3-8b.json", 8, 0.05},
    {"deepcompile-zero3.json", "llama-3-8b.json", 8, 0.05},
    {"zero3-offload.json", "llama-3-70b.json", 16, 0.05},
    // docs/schedule.md, exception 1 (+6.8 %): the EP all-to-alls and the ZeRO-2 gradient buckets
    // share the NICs; the schedule serves the link in issue order, so a bucket issued first holds
    // up the all-to-all after it, where the closed form spreads the buckets' traffic evenly over
    // its pass (sim/cost/shared_links.h).
    {"deepseek-v3-autoep.json", "deepseek-v3.json", 256, 0.08},
};

TEST(ClosedFormAgreementTest, SampleConfigs) {
  const Cluster cluster = H100();
  for (const SampleCase& c : kSamples) {
    SCOPED_TRACE(c.config);
    const ModelSpec model = testing::ParsePresetOrDie(c.model);
    PlanKnobs knobs;
    knobs.world_size = c.world;
    const std::string path = std::string("samples/configs/") + c.config;
    auto e = Evaluate(model, cluster, path, ReadSource(path), {}, knobs);
    ASSERT_EQ(e->outcome, Evaluation::Outcome::kNumbers) << e->message;
    const double closed = e->time.step_seconds;
    const double scheduled = ScheduleSeconds(model, e->config, e->plan, e->input);
    ASSERT_GT(scheduled, 0);
    EXPECT_LE(std::abs(scheduled / closed - 1.0), c.bound) << scheduled << " s vs " << closed << " s";
  }
}

TEST(ClosedFormAgreementTest, PublishedRunsTheScheduleCovers) {
  // The schedule simulates DeepSpeed's engine without pipeline stages: of the published runs,
  // Narayanan et al. 2021 Table 2's ZeRO-3 rows (every other row is Megatron-LM or pipelined).
  auto selene = ParseCluster(Json::parse(ReadSource("samples/clusters/selene-a100-80gb-calibrated.json")));
  ASSERT_TRUE(selene.ok());
  int covered = 0;
  for (const char* file : {"samples/runs/published-runs.tsv", "samples/runs/held-out-runs.tsv"}) {
    auto runs = ParseMeasuredRuns(ReadSource(file));
    ASSERT_TRUE(runs.ok()) << runs.error().message;
    for (const MeasuredRun& run : *runs) {
      if (run.pp > 1 || !FrameworkOf(run.engine).event_schedule) continue;
      SCOPED_TRACE(run.run_id);
      auto setup = SetUpRun(run, *selene);
      ASSERT_TRUE(setup.ok()) << setup.error().message;
      const RunSetup& s = **setup;
      const TimeReport time = EstimateStepTime(s.input);
      const double closed = time.step_seconds;
      const double scheduled = ScheduleSeconds(s.model, s.config, s.plan, s.input);
      ASSERT_GT(scheduled, 0);
      ++covered;
      // docs/schedule.md, exception 2 (-3 to -11 %): with full recompute the closed form gathers
      // each layer for the recompute and again, in backward, the share of its modules past
      // max_reuse_distance; the schedule gathers once for both (its recompute is one task per
      // layer). The gap is at most those backward gathers.
      EXPECT_LE(std::abs(scheduled / closed - 1.0), 0.12) << scheduled << " s vs " << closed << " s";
      const auto regathers = time.exposed_seconds_by_purpose.find("zero3_all_gather_bwd");
      ASSERT_NE(regathers, time.exposed_seconds_by_purpose.end());
      EXPECT_LE(closed - scheduled, regathers->second) << scheduled << " s vs " << closed << " s";
    }
  }
  EXPECT_GE(covered, 2);
}

}  // namespace
}  // namespace dsp::sim::schedule
