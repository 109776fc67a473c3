// SPDX-License-Identifier: Apache-2.0
// The error bands ds-plan prints (sim/report/error_band.cc) are what validation supports: every run
// of samples/runs/modern-runs.tsv and every timed run of samples/runs/deepspeed-runs.tsv is simulated
// (as ModernRunsTest and DeepSpeedRunsTest do), grouped by engine and GPU class, and the mean and worst |error| of step time and peak memory must be the compiled table's.
// When the cost model changes, this test fails and prints the table to paste.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "sim/report/error_band.h"
#include "tests/sim/session/deepspeed_runs_util.h"
#include "tests/sim/session/modern_runs_util.h"

namespace dsp::sim {
namespace {

struct Stats {
  int step_runs = 0, memory_runs = 0;
  double step_sum = 0, step_max = 0, memory_sum = 0, memory_max = 0;
};

void Add(double predicted_s, double measured_s, double predicted_gb, double measured_gb, Stats* s) {
  const double step = std::fabs(predicted_s / measured_s - 1);
  ++s->step_runs;
  s->step_sum += step;
  s->step_max = std::max(s->step_max, step);
  if (measured_gb > 0) {
    const double memory = std::fabs(predicted_gb / measured_gb - 1);
    ++s->memory_runs;
    s->memory_sum += memory;
    s->memory_max = std::max(s->memory_max, memory);
  }
}

TEST(ErrorBandTest, TheTableMatchesTheMeasuredRuns) {
  std::map<std::pair<std::string, std::string>, Stats> groups;
  for (const modern_runs::Row& r : testing::TsvRows("samples/runs/modern-runs.tsv")) {
    const modern_runs::Outcome o = modern_runs::Simulate(r);
    ASSERT_GT(o.predicted_s, 0) << o.run_id;
    ASSERT_FALSE(o.gpu_class.empty()) << o.run_id;
    Add(o.predicted_s, o.measured_s, o.predicted_gb, o.measured_gb, &groups[{o.engine, o.gpu_class}]);
  }
  for (const modern_runs::Row& r : testing::TsvRows("samples/runs/deepspeed-runs.tsv")) {
    const deepspeed_runs::Outcome o = deepspeed_runs::Simulate(r);
    ASSERT_GT(o.predicted_s, 0) << o.run_id;
    if (o.measured_oom) continue;  // no step time; DeepSpeedRunsTest checks the verdict
    Add(o.predicted_s, o.measured_s, o.predicted_gb, o.measured_gb, &groups[{"deepspeed", o.gpu_class}]);
  }
  std::ostringstream table, markdown;
  markdown << "| engine | GPU | runs | mean step-time error | worst | runs with memory | mean memory error | worst |\n"
           << "|---|---|---:|---:|---:|---:|---:|---:|\n";
  bool same = groups.size() == ValidationBands().size();
  for (const auto& [key, s] : groups) {
    const double step_mean = s.step_sum / s.step_runs;
    const double memory_mean = s.memory_runs > 0 ? s.memory_sum / s.memory_runs : 0;
    char line[256];
    std::snprintf(line, sizeof line, "    {\"%s\", \"%s\", %d, %.3f, %.3f, %d, %.3f, %.3f},\n", key.first.c_str(),
                  key.second.c_str(), s.step_runs, step_mean, s.step_max, s.memory_runs, memory_mean, s.memory_max);
    table << line;
    auto pct = [](double f) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%.1f%%", 100 * f);
      return std::string(buf);
    };
    markdown << "| " << key.first << " | " << key.second << " | " << s.step_runs << " | " << pct(step_mean) << " | "
             << pct(s.step_max) << " | " << s.memory_runs << " | " << (s.memory_runs ? pct(memory_mean) : "-") << " | "
             << (s.memory_runs ? pct(s.memory_max) : "-") << " |\n";
    const ErrorBand* band = nullptr;
    for (const ErrorBand& b : ValidationBands()) {
      if (b.engine == key.first && b.gpu_class == key.second) band = &b;
    }
    auto close = [](double a, double b) { return std::fabs(a - b) <= 0.0006; };
    same = same && band != nullptr && band->step_runs == s.step_runs && close(band->step_mean_abs, step_mean) &&
           close(band->step_max_abs, s.step_max) && band->memory_runs == s.memory_runs &&
           close(band->memory_mean_abs, memory_mean) && close(band->memory_max_abs, s.memory_max);
  }
  EXPECT_TRUE(same) << "sim/report/error_band.cc kBands is stale; paste (with the array size " << groups.size()
                    << "):\n" << table.str();
  EXPECT_NE(modern_runs::Source("docs/validation.md").find(markdown.str()), std::string::npos)
      << "docs/validation.md \"Error bands\" is not the current table:\n" << markdown.str();
}

TEST(ErrorBandTest, TextSaysHowCloseOrThatNothingWasMeasured) {
  GpuSpec h100;
  h100.name = "H100 SXM5 80GB";
  GpuSpec b200;
  b200.name = "B200 180GB";
  EXPECT_EQ(GpuClass(h100), "H100");
  EXPECT_EQ(GpuClass(GpuSpec{.name = "B200 (GB200 NVL72) 186GB"}), "GB200");
  EXPECT_EQ(GpuClass(GpuSpec{.name = "MI300X"}), "");
  const Accuracy validated = AccuracyFor(Engine::kMegatronLm, h100);
  ASSERT_NE(validated.band, nullptr);
  EXPECT_NE(BandText(validated, false).find("(mean |step-time error| over " + std::to_string(validated.band->step_runs) +
                                            " measured megatron-lm runs on H100; worst "),
            std::string::npos)
      << BandText(validated, false);
  EXPECT_EQ(BandText(validated, false).rfind("\u00b1", 0), 0u);
  const Accuracy none = AccuracyFor(Engine::kMegatronLm, b200);
  EXPECT_EQ(none.band, nullptr);
  EXPECT_EQ(BandText(none, false), "not validated (no measured megatron-lm run on B200)");
  EXPECT_EQ(BandText(none, true), "not validated (no measured peak memory of a megatron-lm run on B200)");
  const Json json = AccuracyToJson(none);
  EXPECT_EQ(json["validated"], false);
  EXPECT_TRUE(json["step_time"].is_null());
  EXPECT_EQ(AccuracyToJson(validated)["step_time"]["runs"], validated.band->step_runs);
}

}  // namespace
}  // namespace dsp::sim
