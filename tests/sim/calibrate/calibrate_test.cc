// SPDX-License-Identifier: Apache-2.0
// ds-plan calibrate: the fit lowers the error, is deterministic, and reproduces the calibrated
// Selene preset from the datasheet one (so the shipped file and the documented command agree).
#include "sim/calibrate/calibrate.h"

#include <gtest/gtest.h>

#include "core/util/file_io.h"

namespace dsp::sim {
namespace {

Cluster LoadOrDie(const std::string& file) {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/clusters/" + file);
  EXPECT_TRUE(text.ok()) << file;
  auto c = ParseCluster(Json::parse(text.ok() ? *text : "{}"));
  EXPECT_TRUE(c.ok()) << file;
  return c.ok() ? *c : Cluster{};
}

std::vector<MeasuredRun> Published() {
  auto text = ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/runs/published-runs.tsv");
  EXPECT_TRUE(text.ok());
  auto runs = ParseMeasuredRuns(text.ok() ? *text : "");
  EXPECT_TRUE(runs.ok());
  return runs.ok() ? *runs : std::vector<MeasuredRun>{};
}

const std::vector<std::string> kDefaultFit = {
    "efficiency.matmul", "efficiency.memory", "inter_node.max_rails",
    "inter_node.hop_latency_seconds", "gpu.kernel_overhead_seconds"};

TEST(CalibrateTest, ReproducesTheCalibratedPreset) {
  const Cluster start = LoadOrDie("selene-a100-80gb.json");
  const Cluster shipped = LoadOrDie("selene-a100-80gb-calibrated.json");
  auto r = Calibrate(Published(), start, kDefaultFit);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_LT(r->mean_abs_error_after, r->mean_abs_error_before);
  EXPECT_LE(r->mean_abs_error_after, 0.08);
  EXPECT_LE(r->max_abs_error_after, 0.20);
  for (const auto& [name, value] : r->fitted) {
    EXPECT_NEAR(value, GetFigure(shipped, name), 1e-9 + 1e-6 * std::fabs(value)) << name;
  }
  // Deterministic: the same inputs give the same figures.
  auto again = Calibrate(Published(), start, kDefaultFit);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->fitted, r->fitted);
}

TEST(CalibrateTest, FitsOneFigureToAMisstatedCluster) {
  // A cluster whose GEMM efficiency is badly off: fitting it alone recovers most of the error.
  Cluster wrong = LoadOrDie("selene-a100-80gb-calibrated.json");
  wrong.efficiency.matmul = 0.4;
  auto r = Calibrate(Published(), wrong, {"efficiency.matmul"});
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->mean_abs_error_before, 0.3);
  EXPECT_LT(r->mean_abs_error_after, 0.06);
  EXPECT_NEAR(r->fitted.front().second, 0.74, 0.03);
}

TEST(CalibrateTest, UnknownFigureIsAnError) {
  auto r = Calibrate(Published(), LoadOrDie("selene-a100-80gb.json"), {"efficiency.tensor"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("efficiency.matmul"), std::string::npos);
}

TEST(CalibrateTest, NoFigureOnlyEvaluates) {
  const Cluster c = LoadOrDie("selene-a100-80gb-calibrated.json");
  auto r = Calibrate(Published(), c, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mean_abs_error_before, r->mean_abs_error_after);
  EXPECT_TRUE(r->fitted.empty());
}

}  // namespace
}  // namespace dsp::sim
