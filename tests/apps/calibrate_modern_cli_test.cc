// SPDX-License-Identifier: Apache-2.0
// ds-plan calibrate on a modern-runs table: the rows of one machine predicted as simulate predicts
// them, fitted with some held out, and the sample it writes for torchtitan's H100 96 GB machines
// (samples/clusters/h100-96gb-hbm2e-calibrated.json, docs/validation.md) is what it writes today.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/util/file_io.h"
#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

using testing::RunCli;

// The 96 GB preset's gpu.compute_clock_ratio is the fit on the nine runs of torchtitan's
// December 2024 benchmark (eager, compiled and float8), its three runs from other documents held
// out, starting from the preset without the figure; the sample cluster file is what that writes,
// and docs/validation.md ("Calibrating a modern cluster") shows its report.
const std::string kHeldOut =
    "tt-llama3-70b-fsdp32-tp8-256g-bf16,tt-llama3-8b-fsdp8-tp8-64g-bf16,tt-llama31-405b-fsdp16-tp8-128g-bf16";

TEST(CalibrateModernCliTest, TheH100NinetySixGigabyteClockIsTheFitOnItsDecemberBenchmark) {
  char dir_template[] = "/tmp/dsp-calibrate-modern-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  Json preset = Json::parse(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-96gb-hbm2e.json"));
  const double figure = preset["gpu"]["compute_clock_ratio"].get<double>();
  preset["gpu"].erase("compute_clock_ratio");
  preset["gpu"].erase("_compute_clock_ratio_source");
  ASSERT_TRUE(WriteFileAtomic(dir + "/h100-96gb-hbm2e.json", preset.dump(2)).ok());
  const std::string out = dir + "/fitted.json";
  auto r = RunCli("calibrate samples/runs/modern-runs.tsv --cluster " + dir +
                      "/h100-96gb-hbm2e.json --hardware h100-96gb-hbm2e-500w --fit gpu.compute_clock_ratio "
                      "--hold-out " + kHeldOut + " -o " + out,
                  /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The report is the one docs/validation.md shows, held-out rows marked and summed apart.
  EXPECT_NE(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/docs/validation.md").find(r.output), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("held out (not fitted): mean |error|"), std::string::npos) << r.output;
  const Json fitted = Json::parse(ReadFile(out).value());
  EXPECT_NEAR(fitted["gpu"]["compute_clock_ratio"].get<double>(), figure, 1e-9);
  const Json sample = Json::parse(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-96gb-hbm2e-calibrated.json"));
  EXPECT_EQ(fitted, sample);
  std::filesystem::remove_all(dir);
}

// The H100 preset's efficiency.matmul is the fit on NVIDIA/dgxc-benchmarking's 12 bf16 NeMo runs,
// starting from the cuBLAS GEMM's 0.807, with NeMo's FP8 runs and the Megatron-LM README's held out
// (docs/validation.md "The GEMM rate of a training step on H100" shows the report).
TEST(CalibrateModernCliTest, TheH100PresetsGemmRateIsTheFitOnTheNemoRuns) {
  char dir_template[] = "/tmp/dsp-calibrate-matmul-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  Json preset = Json::parse(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-sxm.json"));
  const double figure = preset["efficiency"]["matmul"].get<double>();
  preset["efficiency"]["matmul"] = 0.807;
  ASSERT_TRUE(WriteFileAtomic(dir + "/h100-sxm-cublas.json", preset.dump(2)).ok());
  auto r = RunCli("calibrate samples/runs/modern-runs.tsv --cluster " + dir +
                      "/h100-sxm-cublas.json --hardware h100-80gb-sxm --group nemo-dgxc-h100,megatron-lm-readme-h100 "
                      "--fit efficiency.matmul --hold-out dgxc-llama31-70b-fp8-64g,dgxc-llama31-405b-fp8-576g,"
                      "mlm-gpt-1.7b-48g,mlm-gpt-16b-192g,mlm-gpt-70b-768g,mlm-gpt-177b-2304g,mlm-gpt-462b-6144g -o " +
                      dir + "/fitted.json",
                  /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/docs/validation.md").find(r.output), std::string::npos)
      << r.output;
  const Json fitted = Json::parse(ReadFile(dir + "/fitted.json").value());
  EXPECT_NEAR(fitted["efficiency"]["matmul"].get<double>(), figure, 5e-5);
  std::filesystem::remove_all(dir);
}

// The H100 preset's inter_node.max_rails is this fit: the preset without it, fitted on the
// DeepCompile blog's two Llama-3-70B ZeRO-3 eager runs, the two Mixtral runs held out
// (docs/validation.md "ZeRO-3's gathers over the network" shows the report).
TEST(CalibrateModernCliTest, TheH100PresetsRailFigureIsTheFitOnTheLlamaZeroThreeRuns) {
  char dir_template[] = "/tmp/dsp-calibrate-zero3-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  Json preset = Json::parse(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-sxm.json"));
  const double figure = preset["inter_node"]["max_rails"].get<double>();
  preset["inter_node"].erase("max_rails");
  ASSERT_TRUE(WriteFileAtomic(dir + "/h100-every-rail.json", preset.dump(2)).ok());
  auto r = RunCli("calibrate samples/runs/modern-runs.tsv --cluster " + dir +
                      "/h100-every-rail.json --hardware h100-80gb-sxm --group deepspeed-zero3-h100 "
                      "--fit inter_node.max_rails "
                      "--hold-out dc-zero3-mixtral-8x7b-ga1-32g,dc-zero3-mixtral-8x7b-ga4-32g -o " + dir + "/fitted.json",
                  /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/docs/validation.md").find(r.output), std::string::npos)
      << r.output;
  const Json fitted = Json::parse(ReadFile(dir + "/fitted.json").value());
  EXPECT_NEAR(fitted["inter_node"]["max_rails"].get<double>(), figure, 1e-4);
  auto unknown = RunCli("calibrate samples/runs/modern-runs.tsv --cluster h100-sxm --group nope --no-fit");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("--group nope: no run of the table is in it"), std::string::npos) << unknown.output;
  std::filesystem::remove_all(dir);
}

TEST(CalibrateModernCliTest, MixedMachinesAndUnknownRowsAreUsageErrors) {
  auto mixed = RunCli("calibrate samples/runs/modern-runs.tsv --cluster h100-sxm --no-fit");
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  EXPECT_NE(mixed.output.find("calibrate one with --hardware NAME"), std::string::npos) << mixed.output;
  auto nowhere = RunCli("calibrate samples/runs/modern-runs.tsv --cluster h100-sxm --hardware b300 --no-fit");
  EXPECT_EQ(nowhere.exit_code, 2) << nowhere.output;
  auto unknown = RunCli("calibrate samples/runs/modern-runs.tsv --cluster h100-sxm --hardware h200 --hold-out nope --no-fit");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("--hold-out nope"), std::string::npos) << unknown.output;
  // Every run held out leaves nothing to fit.
  auto all = RunCli("calibrate samples/runs/modern-runs.tsv --cluster h200 --hardware h200 "
                    "--hold-out tt-llama31-8b-fsdp-32g-h200-float8");
  EXPECT_EQ(all.exit_code, 2) << all.output;
  EXPECT_NE(all.output.find("every run is held out"), std::string::npos) << all.output;
  // The published-runs format has no machine column to choose by.
  auto published = RunCli("calibrate samples/runs/published-runs.tsv --cluster a100-80gb --hardware x --no-fit");
  EXPECT_EQ(published.exit_code, 2) << published.output;
}

}  // namespace
}  // namespace dsp
