// SPDX-License-Identifier: Apache-2.0
// ds-plan compare, calibrate --trace and --steps: a profiler trace against the plan it ran, the trace alone
// (a public 2-rank DDP trace ds-plan did not write), the JSON report against its schema, plan
// snapshots as input, and clear errors for what is not a trace.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/schema/embedded.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::SchemaErrors;

const std::string kDir = "docs/measurements/h200-steps/";
const std::string kPlan = kDir + "zero0-bf16.json --model " + kDir + "models/llama-3-8b-4layers.json" +
                          " --cluster samples/clusters/h200.json --world-size 1 --seq-len 8192";
const std::string kTrace = kDir + "traces/llama-3-8b-4layers-mb1-s8192-none-sdpa.trace.json.gz";

TEST(CompareCliTest, PredictedAgainstTheTraceLargestGapFirst) {
  auto r = RunCli("compare " + kPlan + " " + kTrace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("trace    NVIDIA H200, 874 GPU events, 1 step"), std::string::npos) << r.output;
  for (const char* row : {"gemm", "attention", "memory-bound", "optimizer", "GPU idle", "step"}) {
    EXPECT_NE(r.output.find(std::string("\n") + row), std::string::npos) << row << "\n" << r.output;
  }
  Json doc = Json::parse(RunCli("compare " + kPlan + " " + kTrace + " --format json", false).output);
  EXPECT_EQ(SchemaErrors(schemas::k_compare_report_schema_json, doc), "") << doc.dump(2);
  double previous = 1e9;
  for (const Json& c : doc["classes"]) {
    const double gap = std::abs(c["predicted_seconds"].get<double>() - c["measured_seconds"].get<double>());
    EXPECT_LE(gap, previous + 1e-12) << c.dump();
    previous = gap;
  }
  // The GEMMs of this step are what the preset prices best (docs/validation.md, "One GPU").
  for (const Json& c : doc["classes"]) {
    if (c["class"] == "gemm") {
      EXPECT_NEAR(c["predicted_seconds"].get<double>() / c["measured_seconds"].get<double>(), 1.0, 0.06);
    }
  }
}

TEST(CompareCliTest, ATraceAloneIsSummarised) {
  auto r = RunCli("compare tests/data/traces/hta-ddp-2rank-rank0.trace.json.gz --format json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(r.output);
  EXPECT_EQ(SchemaErrors(schemas::k_compare_report_schema_json, doc), "") << doc.dump(2);
  EXPECT_TRUE(doc["plan"].is_null());
  EXPECT_EQ(doc["steps"], 3);
  bool all_reduce = false;
  for (const Json& c : doc["classes"]) {
    if (c["class"] == "all_reduce") {
      all_reduce = true;
      EXPECT_EQ(c["groups"], "[0, 1]");
      EXPECT_NEAR(c["measured_seconds"].get<double>(), 46.762159e-3 / 3, 1e-8);
    }
  }
  EXPECT_TRUE(all_reduce) << r.output;
}

TEST(CompareCliTest, APlanSnapshotBringsItsFlags) {
  const std::string dir = ::testing::TempDir() + "/compare_plan";
  std::filesystem::create_directories(dir);
  const std::string plan = dir + "/step.plan.json";
  auto p = RunCli("plan " + kPlan + " -o " + plan + " --force");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto with_plan = RunCli("compare " + plan + " " + kTrace, false);
  auto with_flags = RunCli("compare " + kPlan + " " + kTrace, false);
  ASSERT_EQ(with_plan.exit_code, 0) << with_plan.output;
  // The same rows; only the label of the first line differs.
  EXPECT_EQ(with_plan.output.substr(with_plan.output.find('\n')),
            with_flags.output.substr(with_flags.output.find('\n')));
}

TEST(CompareCliTest, WhatIsNotATraceIsAClearError) {
  auto missing = RunCli("compare " + kPlan + " no-such-trace.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("no-such-trace.json"), std::string::npos) << missing.output;
  auto config = RunCli("compare samples/configs/autosp-sp4.json");
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_NE(config.output.find("traceEvents"), std::string::npos) << config.output;
  const std::string dir = ::testing::TempDir() + "/compare_bad";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/truncated.json.gz") << std::string("\x1f\x8b\x08\x00", 4) << "garbage";
  auto bad = RunCli("compare " + dir + "/truncated.json.gz");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("gzip"), std::string::npos) << bad.output;
  auto no_model = RunCli("compare " + kDir + "zero0-bf16.json " + kTrace);
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.output.find("--model and --cluster"), std::string::npos) << no_model.output;
}

TEST(CompareCliTest, CalibrateTraceClosesTheComputeGaps) {
  const std::string dir = ::testing::TempDir() + "/calibrate_trace";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/fitted.json";
  std::filesystem::remove(out);
  auto r = RunCli("calibrate " + kDir + "zero0-bf16.json --trace " + kTrace + " --model " + kDir +
                  "models/llama-3-8b-4layers.json --cluster samples/clusters/h200.json --world-size 1 "
                  "--seq-len 8192 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fitted: efficiency.memory="), std::string::npos) << r.output;
  // The file the command wrote is the sample docs/validation.md uses.
  Json fitted = Json::parse(std::ifstream(out));
  Json sample = Json::parse(std::ifstream(std::string(DSP_SOURCE_DIR) + "/" + kDir + "h200-fitted-from-one-trace.json"));
  for (const char* key : {"matmul", "memory", "attention"}) {
    EXPECT_DOUBLE_EQ(fitted["efficiency"][key].get<double>(), sample["efficiency"][key].get<double>()) << key;
  }
  // With it the compute classes match the trace they were fitted to.
  auto again = RunCli("compare " + kDir + "zero0-bf16.json --model " + kDir + "models/llama-3-8b-4layers.json --cluster " +
                      out + " --world-size 1 --seq-len 8192 " + kTrace + " --format json", false);
  Json doc = Json::parse(again.output);
  for (const Json& c : doc["classes"]) {
    if (c["class"] == "gemm" || c["class"] == "attention") {
      EXPECT_NEAR(c["predicted_seconds"].get<double>() / c["measured_seconds"].get<double>(), 1.0, 0.01) << c.dump();
    }
  }
  // An existing output is not replaced without --force.
  auto refused = RunCli("calibrate " + kDir + "zero0-bf16.json --trace " + kTrace + " --model " + kDir +
                        "models/llama-3-8b-4layers.json --cluster samples/clusters/h200.json -o " + out);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
}

// calibrate --steps: the H200 preset's efficiencies and host figures are what it fits to the
// committed fit sweep (docs/measurements/h200-fit: 10 traced steps of models the test sweep does
// not have), to the 3 significant figures the preset keeps.
TEST(CompareCliTest, CalibrateStepsFitsTheH200PresetFromTheFitSweep) {
  const std::string dir = ::testing::TempDir() + "/calibrate_steps";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/fitted.json";
  std::filesystem::remove(out);
  auto r = RunCli("calibrate " + kDir + "zero0-bf16.json --steps docs/measurements/h200-fit/steps.tsv "
                  "--cluster samples/clusters/h200.json --world-size 1 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("llama-3-70b-2layers mb1 s4096 none sdpa"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("over 10 steps"), std::string::npos) << r.output;
  Json fitted = Json::parse(std::ifstream(out));
  Json preset = Json::parse(std::ifstream(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h200.json"));
  for (const char* pointer : {"/efficiency/matmul", "/efficiency/memory", "/efficiency/attention",
                              "/host/forward_seconds_per_kernel", "/host/backward_seconds_per_kernel"}) {
    const Json::json_pointer p(pointer);
    ASSERT_TRUE(fitted.contains(p)) << pointer;
    EXPECT_NEAR(fitted[p].get<double>() / preset[p].get<double>(), 1.0, 0.005) << pointer;
  }
  EXPECT_NE(fitted["_calibration"].get<std::string>().find("calibrate --steps"), std::string::npos);
}

TEST(CompareCliTest, CalibrateStepsErrors) {
  const std::string dir = ::testing::TempDir() + "/calibrate_steps_errors";
  std::filesystem::create_directories(dir);
  const std::string tsv = dir + "/steps.tsv";
  std::ofstream(tsv) << "model\tconfig\tmicro_batch\tseq\trecompute\tattention\tstatus\tstep_ms_median\n"
                        "m\tm.json\t1\t8\tnone\tsdpa\toom\t\n";
  auto none = RunCli("calibrate " + kDir + "zero0-bf16.json --steps " + tsv + " --cluster samples/clusters/h200.json");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("no step with status ok"), std::string::npos) << none.output;
  std::ofstream(tsv) << "model\tconfig\tmicro_batch\tseq\trecompute\tattention\tstatus\tstep_ms_median\n"
                        "m\tno-such-model.json\t1\t8\tnone\tsdpa\tok\t5\n";
  auto missing = RunCli("calibrate " + kDir + "zero0-bf16.json --steps " + tsv + " --cluster samples/clusters/h200.json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("no-such-model.json"), std::string::npos) << missing.output;
  auto both = RunCli("calibrate " + kDir + "zero0-bf16.json --steps " + tsv + " --trace " + kTrace +
                     " --cluster samples/clusters/h200.json");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.output.find("--steps and --trace"), std::string::npos) << both.output;
}

}  // namespace
}  // namespace dsp
