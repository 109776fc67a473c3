// SPDX-License-Identifier: Apache-2.0
// Every run of samples/runs/modern-runs.tsv (2024-2026 training runs on H100, H200 and A100 by
// NeMo, Megatron-LM, torchtitan, NeMo AutoModel and DeepSpeed; sources in its `source` column)
// evaluated as `ds-plan simulate` would with the flags the engines issue names: framework nemo /
// megatron-lm -> --engine megatron-lm, torchtitan / other -> fsdp2, deepspeed -> deepspeed; the ZeRO
// stage from zero_or_fsdp; --tp/--pp/--virtual-stages/--cp/--ep/--megatron-sp/--fp8 from the row
// (DeepSpeed takes TP and EP from its config), --tp-comm-overlap where the row's source says TP
// communication overlap is on (column tp_comm_overlap), --fp8-param-gather where it says FP8 parameters
// (column fp8_param_gather: NeMo's fp8_params, torchao's enable_fsdp_float8_all_gather) and
// --torch-compile where it says torch.compile (column compile; "torch.compile:model", torchtitan
// before April 2025, adds --eager-loss) and --pp-schedule-micro-batches where the framework calls its
// pipeline schedule once per local batch (column pp_schedule_micro_batches: NeMo AutoModel's
// local_batch_size / pp_microbatch_size). Each must give numbers; docs/validation.md "Modern
// runs, every engine" holds the table this test computes and the test fails when it is stale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sim/session/modern_runs_util.h"

namespace dsp::sim {
namespace {

using testing::Fixed;
using modern_runs::Outcome;
using modern_runs::Row;
using modern_runs::Simulate;
using modern_runs::Source;

std::string Table(const std::vector<Outcome>& outcomes) {
  std::ostringstream out;
  out << "| run | engine | flags | measured s | predicted s | error | peak measured GB | predicted GB | verdict |\n";
  out << "|---|---|---|---:|---:|---:|---:|---:|---|\n";
  double sum = 0;
  for (const Outcome& o : outcomes) {
    const double error = o.predicted_s / o.measured_s - 1;
    sum += std::fabs(error);
    out << "| " << o.run_id << " | " << o.engine << " | " << o.flags << " | " << Fixed(o.measured_s, "%.3f") << " | "
        << Fixed(o.predicted_s, "%.3f") << " | " << Fixed(100 * error, "%+.1f%%") << " | "
        << (o.measured_gb > 0 ? Fixed(o.measured_gb, "%.1f") : "") << " | " << Fixed(o.predicted_gb, "%.1f") << " | "
        << (o.fits ? "fits" : "DOES NOT FIT") << " |\n";
  }
  out << "\nMean |step-time error| over the " << outcomes.size() << " runs: "
      << Fixed(100 * sum / static_cast<double>(outcomes.size()), "%.1f%%") << ".\n";
  return out.str();
}

TEST(ModernRunsTest, EveryRunSimulatesAndTheDocsCarryTheTable) {
  const std::vector<Row> rows = testing::TsvRows("samples/runs/modern-runs.tsv");
  ASSERT_EQ(rows.size(), 45u);
  std::vector<Outcome> outcomes;
  for (const Row& r : rows) {
    Outcome o = Simulate(r);
    EXPECT_GT(o.predicted_s, 0) << o.run_id;
    if (o.predicted_s > 0) outcomes.push_back(o);
  }
  ASSERT_EQ(outcomes.size(), rows.size());
  const std::string table = Table(outcomes);
  EXPECT_NE(Source("docs/validation.md").find(table), std::string::npos)
      << "docs/validation.md \"Modern runs, every engine\" is not the current table:\n" << table;
}

// The accuracy the cost model holds on these runs. Where it meets the bound set for it (mean
// |step-time error| 8 %, every run within 20 %, no run that trained predicted DOES NOT FIT) the
// bound is that one; where it does not yet (measured peaks within 10 %: torchtitan's pipelined
// 405B runs are 11.9 % and 14.3 % under) the bound is a ratchet just above today's figure, so
// that nothing gets worse unnoticed. docs/validation.md "Modern runs, every engine" states both.
TEST(ModernRunsTest, StepTimeAndMemoryHoldTheirBounds) {
  constexpr double kMeanStepBound = 0.08;       // the target
  constexpr double kWorstStepBound = 0.20;      // the target
  constexpr double kWorstMemoryRatchet = 0.15;  // the target is 0.10
  double sum = 0, worst = 0, worst_memory = 0;
  std::string worst_run, worst_memory_run;
  const std::vector<Row> rows = testing::TsvRows("samples/runs/modern-runs.tsv");
  for (const Row& r : rows) {
    const Outcome o = Simulate(r);
    ASSERT_GT(o.predicted_s, 0) << o.run_id;
    EXPECT_TRUE(o.fits) << o.run_id << " trained but is predicted not to fit (" << o.predicted_gb << " GB)";
    const double error = std::fabs(o.predicted_s / o.measured_s - 1);
    sum += error;
    if (error > worst) worst = error, worst_run = o.run_id;
    if (o.measured_gb > 0) {
      const double memory = std::fabs(o.predicted_gb / o.measured_gb - 1);
      if (memory > worst_memory) worst_memory = memory, worst_memory_run = o.run_id;
    }
  }
  EXPECT_LE(sum / static_cast<double>(rows.size()), kMeanStepBound);
  EXPECT_LE(worst, kWorstStepBound) << worst_run;
  EXPECT_LE(worst_memory, kWorstMemoryRatchet) << worst_memory_run;
}

// torchtitan ran Llama 3.1 405B on 512 H100 twice, 1F1B and interleaved 1F1B over the same 8
// micro-batches (benchmarks/llama3_h100_202412_torchtitan.md Table 5): interleaving reserved
// 82.5 - 72.7 = 9.8 GiB (10.5 GB) less. Both hold every micro-batch's layer inputs on stage 0
// (m = p caps the interleaved warm-up: schedules.py _get_warmup_ops), and interleaving frees one
// chunk's unsharded fp32 gradients before the other's backward begins
// (pipelining/stage.py backward_maybe_with_nosync), while torch's stage keeps twice as many
// outputs in flight (stage.py fwd_cache). Before these were modelled ds-plan had the interleaved
// run 7.5 GB above the 1F1B one.
TEST(ModernRunsTest, InterleavingSavesWhatTorchtitansPipelineRunsMeasured) {
  double measured[2] = {0, 0}, predicted[2] = {0, 0};
  for (const Row& r : testing::TsvRows("samples/runs/modern-runs.tsv")) {
    const int i = r.at("run_id") == "tt-llama31-405b-3d-1f1b-512g-float8"          ? 0
                  : r.at("run_id") == "tt-llama31-405b-3d-interleaved-512g-float8" ? 1
                                                                                    : -1;
    if (i < 0) continue;
    const Outcome o = Simulate(r);
    measured[i] = o.measured_gb;
    predicted[i] = o.predicted_gb;
  }
  ASSERT_GT(measured[0] * measured[1], 0) << "both rows must be in the table with their memory";
  const double saved_measured = measured[0] - measured[1], saved_predicted = predicted[0] - predicted[1];
  EXPECT_NEAR(saved_measured, 10.5, 0.1);
  EXPECT_NEAR(saved_predicted, saved_measured, 3.5) << "predicted " << saved_predicted << " GB";
}

}  // namespace
}  // namespace dsp::sim
