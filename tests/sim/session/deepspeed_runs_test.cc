// SPDX-License-Identifier: Apache-2.0
// Every run of samples/runs/deepspeed-runs.tsv (2025-2026 DeepSpeed runs; sources in its `source`
// column) simulated as `ds-plan simulate --engine deepspeed` would (tests/sim/session/
// deepspeed_runs_util.h maps the columns to the config). docs/validation.md "DeepSpeed runs" holds
// the table this test computes; the test fails when it is stale, and when more runs that did not
// fit are predicted to fit than the table records (the count may only go down).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sim/session/deepspeed_runs_util.h"

namespace dsp::sim {
namespace {

using deepspeed_runs::Outcome;
using testing::Fixed;

// Runs that did not fit but come out FITS: none since the eager norms' and q/k norms' saved
// tensors are counted (docs/validation.md, "DeepSpeed runs").
constexpr int kKnownMissedOoms = 0;

struct Summary {
  std::vector<double> step_errors, memory_errors;
  int oom_right = 0, oom_missed = 0, rows = 0;
  int ran_but_not_fit = 0;  // trained, yet predicted DOES NOT FIT
};

std::string Percent(double fraction) { return Fixed(100 * fraction, "%.1f%%"); }

std::string SummaryLine(const std::string& name, const Summary& s) {
  std::ostringstream out;
  double step_sum = 0, step_max = 0, mem_sum = 0;
  for (double e : s.step_errors) step_sum += std::fabs(e), step_max = std::max(step_max, std::fabs(e));
  for (double e : s.memory_errors) mem_sum += std::fabs(e);
  out << "| " << name << " | " << s.rows << " | " << s.step_errors.size() << " | "
      << (s.step_errors.empty() ? "-" : Percent(step_sum / static_cast<double>(s.step_errors.size()))) << " | "
      << (s.step_errors.empty() ? "-" : Percent(step_max)) << " | " << s.memory_errors.size() << " | "
      << (s.memory_errors.empty() ? "-" : Percent(mem_sum / static_cast<double>(s.memory_errors.size()))) << " | "
      << s.oom_right << " of " << s.oom_right + s.oom_missed << " | " << s.ran_but_not_fit << " |\n";
  return out.str();
}

void Add(const Outcome& o, Summary* s) {
  ++s->rows;
  if (o.measured_oom) {
    (o.fits ? s->oom_missed : s->oom_right) += 1;
    return;
  }
  if (!o.fits) ++s->ran_but_not_fit;
  s->step_errors.push_back(o.predicted_s / o.measured_s - 1);
  if (o.measured_gb > 0) s->memory_errors.push_back(o.predicted_gb / o.measured_gb - 1);
}

std::string Table(const std::vector<Outcome>& outcomes, int* missed_ooms) {
  std::ostringstream out;
  out << "| run | measured s | predicted s | error | peak measured GB | predicted GB | verdict |\n";
  out << "|---|---:|---:|---:|---:|---:|---|\n";
  std::map<std::string, Summary> groups;
  Summary all;
  for (const Outcome& o : outcomes) {
    Add(o, &groups[o.group]);
    Add(o, &all);
    out << "| " << o.run_id << " | " << (o.measured_oom ? "OOM" : Fixed(o.measured_s, "%.2f")) << " | "
        << Fixed(o.predicted_s, "%.2f") << " | "
        << (o.measured_oom ? "" : Fixed(100 * (o.predicted_s / o.measured_s - 1), "%+.1f%%")) << " | "
        << (o.measured_gb > 0 ? Fixed(o.measured_gb, "%.1f") : "") << " | " << Fixed(o.predicted_gb, "%.1f") << " | "
        << (o.fits ? "fits" : "DOES NOT FIT") << " |\n";
  }
  out << "\n| group | rows | timed | mean abs step error | worst | with memory | mean abs memory error | OOM predicted | ran, predicted DOES NOT FIT |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [name, s] : groups) out << SummaryLine(name, s);
  out << SummaryLine("all", all);
  *missed_ooms = all.oom_missed;
  return out.str();
}

TEST(DeepSpeedRunsTest, EveryRunSimulatesAndTheDocsCarryTheTable) {
  const std::vector<testing::TsvRow> rows = testing::TsvRows("samples/runs/deepspeed-runs.tsv");
  ASSERT_EQ(rows.size(), 29u);
  std::vector<Outcome> outcomes;
  for (const testing::TsvRow& r : rows) {
    Outcome o = deepspeed_runs::Simulate(r);
    EXPECT_GT(o.predicted_s, 0) << o.run_id;
    if (o.predicted_s > 0) outcomes.push_back(o);
  }
  ASSERT_EQ(outcomes.size(), rows.size());
  int missed = 0;
  const std::string table = Table(outcomes, &missed);
  EXPECT_NE(modern_runs::Source("docs/validation.md").find(table), std::string::npos)
      << "docs/validation.md \"DeepSpeed runs\" is not the current table:\n" << table;
  EXPECT_LE(missed, kKnownMissedOoms) << "more runs that ran out of memory are predicted to fit";
}

// The bounds set for these runs: mean |step-time error| 8 %, median |memory error| 10 %, no run
// that ran out of memory predicted to fit. The memory and OOM bounds hold; the step time does not
// yet (31 %: host-bound AutoEP steps, ZeRO-Offload's CPU Adam on a shared host and DeepCompile's
// H200 runs, docs/validation.md "DeepSpeed runs"), so its bound is a ratchet just above today's
// figure: nothing gets worse unnoticed.
TEST(DeepSpeedRunsTest, StepTimeAndMemoryHoldTheirBounds) {
  constexpr double kMeanStepRatchet = 0.32;  // the target is 0.08
  constexpr double kMedianMemoryBound = 0.10;
  std::vector<double> steps, memory;
  int missed = 0;
  for (const testing::TsvRow& r : testing::TsvRows("samples/runs/deepspeed-runs.tsv")) {
    const Outcome o = deepspeed_runs::Simulate(r);
    ASSERT_GT(o.predicted_s, 0) << o.run_id;
    if (o.measured_oom) {
      missed += o.fits ? 1 : 0;
      continue;
    }
    steps.push_back(std::fabs(o.predicted_s / o.measured_s - 1));
    if (o.measured_gb > 0) memory.push_back(std::fabs(o.predicted_gb / o.measured_gb - 1));
  }
  ASSERT_FALSE(steps.empty());
  ASSERT_FALSE(memory.empty());
  double sum = 0;
  for (double e : steps) sum += e;
  EXPECT_LE(sum / static_cast<double>(steps.size()), kMeanStepRatchet);
  std::sort(memory.begin(), memory.end());
  const size_t n = memory.size();
  const double median = n % 2 ? memory[n / 2] : (memory[n / 2 - 1] + memory[n / 2]) / 2;
  EXPECT_LE(median, kMedianMemoryBound);
  EXPECT_EQ(missed, 0);
}

// The mapping reads the TSV's quoted JSON and keeps only what DeepSpeed reads.
TEST(DeepSpeedRunsTest, ExtraConfigBecomesTheDeepSpeedConfig) {
  testing::TsvRow r = {{"run_id", "x"}, {"micro_batch", "4"}, {"grad_accum", "1"}, {"zero", "3"},
                       {"offload", "opt:cpu,act_ckpt:cpu"}, {"sp", "8"}, {"tp", "1"}, {"ep", "1"},
                       {"compile", "none"},
                       {"extra_config", R"("{""env"":""A=B"",""arctic_training"":{""liger_kernel"":true},)"
                                        R"(""seq_parallel_communication_data_type"":""bf16""}")"}};
  const Json c = deepspeed_runs::ConfigOf(r);
  EXPECT_EQ(c["sequence_parallel_size"], 8);
  EXPECT_EQ(c["seq_parallel_communication_data_type"], "bf16");
  EXPECT_EQ(c["zero_optimization"]["offload_optimizer"]["device"], "cpu");
  EXPECT_TRUE(c["activation_checkpointing"]["cpu_checkpointing"].get<bool>());
  EXPECT_FALSE(c.contains("env"));
  EXPECT_FALSE(c.contains("arctic_training"));
}

}  // namespace
}  // namespace dsp::sim
