// SPDX-License-Identifier: Apache-2.0
// torchtitan's async TP against its vanilla TP, as measured on the same machines (Meta's Grand
// Teton, H100 96 GB at 500 W): the pairs of pytorch/torchtitan
// benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (torchtitan 820504e, torch 38410cf9: the
// "Average TPS" of each TP type; float8 rowwise left out, its vanilla baseline is the one
// torchtitan#1207 calls slow) and Table 4 of benchmarks/llama3_h100_202412_torchtitan.md
// (torchtitan 9dec370: "2D" and "2D + AsyncTP"). Each pair is a row of samples/runs/modern-runs.tsv
// (the vanilla run), simulated as the modern-runs table does, and again with tp_comm_overlap on
// (--tp-comm-overlap: fsdp2 with --torch-compile is torchtitan's async TP); the float8 pairs of
// the June benchmark are its bf16 rows with float8 on. docs/validation.md "Async TP" holds the
// table this test computes.
#include <gtest/gtest.h>

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

struct Pair {
  const char* label;
  const char* vanilla_row;  // run_id in samples/runs/modern-runs.tsv
  bool float8;              // the row's run with model.converters = ["float8"] (tensorwise)
  double row_tps;           // the row's own measured tokens per second per GPU
  double vanilla_tps, async_tps;  // the pair's, measured
};

constexpr Pair kPairs[] = {
    {"Llama 3.1 70B bf16, 2025-06", "tt-llama3-70b-fsdp32-tp8-256g-bf16", false, 597.3, 597.3, 652.4},
    {"Llama 3.1 70B float8, 2025-06", "tt-llama3-70b-fsdp32-tp8-256g-bf16", true, 597.3, 809.8, 942.4},
    {"Llama 3.1 8B bf16, 2025-06", "tt-llama3-8b-fsdp8-tp8-64g-bf16", false, 4378.0, 4378.0, 4809.4},
    {"Llama 3.1 8B float8, 2025-06", "tt-llama3-8b-fsdp8-tp8-64g-bf16", true, 4378.0, 5078.1, 5570.1},
    {"Llama 3.1 70B float8, 2024-12", "tt-llama31-70b-fsdp32-tp8-256g-float8", false, 829.0, 829.0, 876.0},
};

TEST(AsyncTpTest, PredictedSpeedUpsAgainstTheMeasuredPairs) {
  const std::vector<Row> rows = testing::TsvRows("samples/runs/modern-runs.tsv");
  std::ostringstream table;
  table << "| run (FSDP x TP 8, torch.compile) | measured vanilla s | measured async s | measured speed-up | "
           "predicted vanilla s | predicted async s | predicted speed-up |\n";
  table << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Pair& p : kPairs) {
    const Row* found = nullptr;
    for (const Row& r : rows) {
      if (r.at("run_id") == p.vanilla_row) found = &r;
    }
    ASSERT_NE(found, nullptr) << p.vanilla_row;
    Row vanilla = *found;
    ASSERT_EQ(vanilla.at("tp_comm_overlap"), "0") << p.vanilla_row;
    ASSERT_DOUBLE_EQ(std::stod(vanilla.at("measured_tokens_per_s_per_gpu")), p.row_tps) << p.label;
    if (p.float8) vanilla["precision"] = "fp8";
    Row async = vanilla;
    async["tp_comm_overlap"] = "1";
    const Outcome v = Simulate(vanilla);
    const Outcome a = Simulate(async);
    ASSERT_GT(v.predicted_s, 0) << p.label;
    ASSERT_GT(a.predicted_s, 0) << p.label;
    EXPECT_NE(a.flags.find("--tp-comm-overlap"), std::string::npos) << a.flags;
    // The measured step of each: the vanilla row's, scaled by the tokens-per-second ratio.
    const double measured_vanilla = v.measured_s * p.row_tps / p.vanilla_tps;
    const double measured_async = measured_vanilla * p.vanilla_tps / p.async_tps;
    // Overlapping the collectives with the GEMMs never makes a step slower.
    EXPECT_LT(a.predicted_s, v.predicted_s) << p.label;
    table << "| " << p.label << " | " << Fixed(measured_vanilla, "%.2f") << " | " << Fixed(measured_async, "%.2f")
          << " | " << Fixed(p.async_tps / p.vanilla_tps, "%.3f") << " | " << Fixed(v.predicted_s, "%.2f") << " | "
          << Fixed(a.predicted_s, "%.2f") << " | " << Fixed(v.predicted_s / a.predicted_s, "%.3f") << " |\n";
  }
  EXPECT_NE(Source("docs/validation.md").find(table.str()), std::string::npos)
      << "docs/validation.md \"Async TP\" is not the current table:\n" << table.str();
}

}  // namespace
}  // namespace dsp::sim
