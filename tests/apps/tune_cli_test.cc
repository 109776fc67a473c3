// SPDX-License-Identifier: Apache-2.0
// ds-plan tune from the command line: report schema, exit codes, --emit-config.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::SchemaErrors;
using testing::ShellQuote;

constexpr const char* kLlama8b = " --model samples/models/llama-3-8b.json --cluster samples/clusters/h100-sxm.json";

TEST(TuneCliTest, JsonReportMatchesItsSchema) {
  auto r = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --top 4 --format json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(r.output);
  EXPECT_EQ(SchemaErrors(schemas::k_tune_report_schema_json, doc), "") << doc.dump(2);
  EXPECT_EQ(doc["plans"].size(), 4u);
  EXPECT_GE(doc["evaluated"].get<int64_t>(), doc["valid"].get<int64_t>());
}

TEST(TuneCliTest, UsageErrors) {
  EXPECT_EQ(RunCli(std::string("tune") + kLlama8b).exit_code, 2);  // no world size
  EXPECT_EQ(RunCli("tune --model samples/models/llama-3-8b.json --cluster does/not/exist.json --world-size 8").exit_code, 2);
  EXPECT_EQ(RunCli("tune --model samples/configs/folding-tp2-ep4.json --cluster samples/clusters/h100-sxm.json --world-size 8").exit_code, 2);
  EXPECT_EQ(RunCli(std::string("tune") + kLlama8b + " --world-size 8 --top 0").exit_code, 2);
}

TEST(TuneCliTest, EmittedConfigValidatesAndIsNeverOverwrittenSilently) {
  auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  auto r = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --seq-len 8192 --emit-config " + ShellQuote(out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(out));
  auto v = RunCli("validate " + ShellQuote(out) + " --world-size 16 --model samples/models/llama-3-8b.json --seq-len 8192");
  EXPECT_EQ(v.exit_code, 0) << v.output;

  // A second run must not replace the file without --force.
  std::ofstream(out) << "{\"mine\": true}\n";
  auto again = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --emit-config " + ShellQuote(out));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  std::ifstream in(out);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "{\"mine\": true}\n");
  auto forced = RunCli(std::string("tune") + kLlama8b + " --world-size 16 --emit-config " + ShellQuote(out) + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  std::filesystem::remove_all(dir);
}

// Everything the winner depends on round-trips through the emitted file: recompute, pipeline
// stages and Megatron's settings live under "_ds_plan", which simulate reads for the flags the
// command line does not give (issue: the winner used to simulate without its recompute).
TEST(TuneCliTest, TheEmittedPlanSimulatesAsTuneRankedIt) {
  auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-rt-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  const std::string world = " --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --world-size 64";
  auto t = RunCli("tune" + world + " --top 1 --format json --emit-config " + ShellQuote(out), false);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const Json best = Json::parse(t.output)["plans"][0];
  ASSERT_EQ(best["recompute"], "full");  // the 64-GPU winner needs full recompute to fit
  auto s = RunCli("simulate " + ShellQuote(out) + world + " --format json", false);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const Json sim = Json::parse(s.output);
  EXPECT_TRUE(sim["memory"]["fits"].get<bool>());
  EXPECT_DOUBLE_EQ(sim["time"]["step_seconds"].get<double>(), best["step_seconds"].get<double>());
  EXPECT_DOUBLE_EQ(sim["memory"]["peak_bytes"].get<double>(), best["peak_bytes"].get<double>());
  // A flag on the command line wins over the note.
  auto none = RunCli("simulate " + ShellQuote(out) + world + " --recompute none --format json", false);
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_FALSE(Json::parse(none.output)["memory"]["fits"].get<bool>());
  // A note that is not what tune writes is a usage error naming the field.
  Json broken = Json::parse(std::ifstream(out));
  broken["_ds_plan"]["recompute"] = "sometimes";
  std::ofstream(out) << broken.dump();
  auto bad = RunCli("simulate " + ShellQuote(out) + world);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("_ds_plan.recompute"), std::string::npos) << bad.output;
  std::filesystem::remove_all(dir);
}

// What the training script changes (the attention kernel, Liger's fused loss, the allocator's
// expandable segments) is part of the plan tune ranked: the emitted file carries it under
// _ds_plan, so simulate on it prints the same step and peak without the flags repeated.
TEST(TuneCliTest, TheScriptSettingsTuneRankedWithTravelInTheEmittedFile) {
  auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-script-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  const std::string world = std::string(kLlama8b) + " --world-size 8 --seq-len 16384";
  auto t = RunCli("tune" + world + " --top 1 --format json --attention cudnn --fused-loss --expandable-segments"
                  " --emit-config " + ShellQuote(out), false);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const Json best = Json::parse(t.output)["plans"][0];
  const Json note = Json::parse(std::ifstream(out))["_ds_plan"];
  EXPECT_EQ(note["attention"], "cudnn");
  EXPECT_EQ(note["fused_loss"], true);
  EXPECT_EQ(note["expandable_segments"], true);
  EXPECT_FALSE(note.contains("tiled_mlp"));
  auto s = RunCli("simulate " + ShellQuote(out) + world + " --format json", false);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const Json sim = Json::parse(s.output);
  EXPECT_EQ(sim["engine"]["attention"], "cudnn");
  EXPECT_TRUE(sim["engine"]["fused_loss"].get<bool>());
  EXPECT_TRUE(sim["engine"]["expandable_segments"].get<bool>());
  EXPECT_DOUBLE_EQ(sim["time"]["step_seconds"].get<double>(), best["step_seconds"].get<double>());
  EXPECT_DOUBLE_EQ(sim["memory"]["peak_bytes"].get<double>(), best["peak_bytes"].get<double>());
  // The command line wins over the note, and a kernel ds-plan does not know is refused by name.
  auto flash2 = RunCli("simulate " + ShellQuote(out) + world + " --attention flash2 --format json", false);
  ASSERT_EQ(flash2.exit_code, 0) << flash2.output;
  EXPECT_EQ(Json::parse(flash2.output)["engine"]["attention"], "flash2");
  Json broken = Json::parse(std::ifstream(out));
  broken["_ds_plan"]["attention"] = "flash3";
  std::ofstream(out) << broken.dump();
  auto bad = RunCli("simulate " + ShellQuote(out) + world);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("_ds_plan.attention"), std::string::npos) << bad.output;
  std::filesystem::remove_all(dir);
}

// The config tune emitted for Llama-3-8B on 16 GPUs simulates to the numbers tune ranked it by.
void ExpectSimulatesAsRanked(const std::string& emitted, const Json& best) {
  auto s = RunCli("simulate " + ShellQuote(emitted) + std::string(kLlama8b) + " --world-size 16 --format json", false);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const Json sim = Json::parse(s.output);
  EXPECT_DOUBLE_EQ(sim["time"]["step_seconds"].get<double>(), best["step_seconds"].get<double>());
  EXPECT_DOUBLE_EQ(sim["memory"]["peak_bytes"].get<double>(), best["peak_bytes"].get<double>());
}

// A deepspeed-only tune of Llama-3-8B on 16 GPUs refuses another engine's flag, saying why.
void ExpectRefused(const std::string& flag, const std::string& says) {
  auto refused = RunCli("tune" + std::string(kLlama8b) + " --world-size 16" + flag);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find(says), std::string::npos) << refused.output;
}

// The Megatron engine's precision options rank its plans with the lighter buffers and travel in
// the emitted file, which simulates as tune ranked it; an engine without them refuses the flag.
TEST(TuneCliTest, MegatronPrecisionOptionsTuneAndTravel) {
  auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-megatron-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  const std::string world = std::string(kLlama8b) + " --world-size 16 --engine megatron-lm";
  auto plain = RunCli("tune" + world + " --top 1 --format json", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  auto t = RunCli("tune" + world + " --top 1 --format json --bf16-grad-buffer --bf16-optimizer-states --emit-config " +
                      ShellQuote(out),
                  false);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const Json best = Json::parse(t.output)["plans"][0];
  // Lighter buffers only widen what fits, and bf16 reductions are no slower: the best is no worse.
  EXPECT_GE(best["tokens_per_second"].get<double>(),
            Json::parse(plain.output)["plans"][0]["tokens_per_second"].get<double>());
  const Json note = Json::parse(std::ifstream(out))["_ds_plan"];
  EXPECT_EQ(note["bf16_grad_buffer"], true);
  EXPECT_EQ(note["bf16_optimizer_states"], true);
  ExpectSimulatesAsRanked(out, best);
  ExpectRefused(" --bf16-grad-buffer", "--bf16-grad-buffer is the Megatron engine's");
  std::filesystem::remove_all(dir);
}

// --bf16-params, --bf16-optimizer-states, --bf16-loss, --te-modules, --automodel-experts,
// --fake-balanced-gate, --torch-compile and --eager-loss rank fsdp2
// plans as simulate prices them and travel in the emitted config's _ds_plan, so the file simulates as
// it was ranked.
TEST(TuneCliTest, Fsdp2PrecisionOptionsTuneAndTravel) {
  auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-fsdp2-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  const std::string world = std::string(kLlama8b) + " --world-size 16 --engine fsdp2";
  auto t = RunCli("tune" + world + " --top 1 --format json --bf16-params --bf16-optimizer-states --bf16-loss "
                  "--te-modules --automodel-experts --fake-balanced-gate --torch-compile --eager-loss --emit-config " +
                  ShellQuote(out),
                  false);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const Json best = Json::parse(t.output)["plans"][0];
  const Json note = Json::parse(std::ifstream(out))["_ds_plan"];
  EXPECT_EQ(note["bf16_params"], true);
  EXPECT_EQ(note["bf16_optimizer_states"], true);
  EXPECT_EQ(note["bf16_loss"], true);
  EXPECT_EQ(note["te_modules"], true);
  EXPECT_EQ(note["torch_compile"], true);
  EXPECT_EQ(note["eager_loss"], true);
  // A dense model has no expert-parallel experts to wrap: the flag is not recorded.
  EXPECT_FALSE(note.contains("automodel_experts"));
  EXPECT_FALSE(note.contains("fake_balanced_gate"));
  ExpectSimulatesAsRanked(out, best);
  ExpectRefused(" --bf16-params", "--bf16-params is FSDP2's parameter dtype");
  ExpectRefused(" --eager-loss", "--eager-loss says torch.compile leaves the loss out");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dsp
