// SPDX-License-Identifier: Apache-2.0
// ds-plan simulate: exit codes (0 even when the plan does not fit, 1 for config errors, 2 for
// usage and unreadable or malformed inputs) and the JSON report against its schema.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/schema/embedded.h"
#include "core/util/file_io.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::SchemaErrors;

constexpr const char* kFolding = "samples/configs/folding-tp2-ep4.json";
constexpr const char* kMixtral = " --model samples/models/mixtral-8x7b.json";
constexpr const char* kH100 = " --cluster samples/clusters/h100-sxm.json";


// Runs simulate with --format json (stdout only) and parses the result.
Json RunJson(const std::string& args) {
  auto r = RunCli("simulate " + args + " --format json", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
  Json doc = Json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.output;
  return doc;
}

TEST(SimulateCliTest, FoldingSampleOnH100) {
  auto r = RunCli(std::string("simulate ") + kFolding + kMixtral + kH100 + " --world-size 8");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("world 8: tp=2 dp=4 sp=1 pp=1 ep=4 etp=1 edp=2 zero=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("verdict: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("MFU"), std::string::npos);
  EXPECT_NE(r.output.find("ep_dispatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("32 samples, 131072 tokens per step"), std::string::npos) << r.output;
}

TEST(SimulateCliTest, JsonMatchesSchemaAndIsConsistent) {
  Json doc = RunJson(std::string(kFolding) + kMixtral + kH100 + " --world-size 8");
  EXPECT_EQ(SchemaErrors(schemas::k_simulate_report_schema_json, doc), "") << doc.dump(2);
  EXPECT_EQ(doc["layout"]["tp"], 2);
  EXPECT_EQ(doc["layout"]["ep"], 4);
  EXPECT_EQ(doc["params"]["total"], 46702792704);  // Mixtral 8x7B, exact
  EXPECT_EQ(doc["memory"]["hbm_bytes"], 81559.0 * (1 << 20));  // the H100 preset: what CUDA reports
  const Json& m = doc["memory"];
  EXPECT_EQ(m["fits"].get<bool>(), m["peak_bytes"].get<double>() + m["allowance_bytes"].get<double>() <=
                                     m["hbm_bytes"].get<double>());
  // The family split adds up to the category totals.
  double params = 0;
  for (const auto& [family, f] : m["by_family"].items()) params += f["parameters_bytes"].get<double>();
  EXPECT_NEAR(params, m["parameters_bytes"].get<double>(), 1e-6 * params + 1);
  // Step = compute + exposed communication + the optimizer step (+ a pipeline bubble, none here).
  const Json& t = doc["time"];
  double exposed = 0;
  for (const auto& [kind, s] : t["exposed_communication_seconds"].items()) exposed += s.get<double>();
  EXPECT_EQ(t["pipeline_bubble_seconds"].get<double>(), 0.0);
  EXPECT_GT(t["optimizer_seconds"].get<double>(), 0.0);
  EXPECT_NEAR(t["step_seconds"].get<double>(),
              t["compute_seconds"].get<double>() + exposed + t["optimizer_seconds"].get<double>() +
                  t["checkpoint_offload_seconds"].get<double>(),
              1e-9 * t["step_seconds"].get<double>());
  EXPECT_GT(t["exposed_communication_seconds"]["all_to_all"].get<double>(), 0);  // EP dispatch/combine
  EXPECT_GT(t["mfu"].get<double>(), 0);
  EXPECT_LT(t["mfu"].get<double>(), 1);
  ASSERT_FALSE(doc["collectives"].empty());
  for (const Json& c : doc["collectives"]) EXPECT_FALSE(c["inter_node"].get<bool>()) << c;  // one node
}

TEST(SimulateCliTest, InterNodeGroupsOnTwoNodes) {
  // 2 nodes of 4: the dp groups {0,2,4,6} cross the node boundary, tp pairs do not.
  Json doc = RunJson(std::string(kFolding) + kMixtral + kH100 + " --nodes 2 --gpus-per-node 4");
  EXPECT_EQ(SchemaErrors(schemas::k_simulate_report_schema_json, doc), "");
  bool dp_inter = false;
  for (const Json& c : doc["collectives"]) {
    if (c["group"] == "tp") {
      EXPECT_FALSE(c["inter_node"].get<bool>()) << c;
    }
    if (c["group"] == "dp") dp_inter = dp_inter || c["inter_node"].get<bool>();
  }
  EXPECT_TRUE(dp_inter) << doc["collectives"].dump(2);
}

TEST(SimulateCliTest, DoesNotFitIsAnAnswer) {
  // Mixtral with ZeRO-1: each rank holds a quarter of the experts (EP 4) in bf16 with their
  // gradients, ~45 GB before optimizer states and activations, so 80 GB cannot hold it.
  std::string args = std::string(kFolding) + kMixtral + kH100 + " --world-size 8";
  auto r = RunCli("simulate " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verdict: DOES NOT FIT"), std::string::npos) << r.output;
  Json doc = RunJson(args);
  EXPECT_FALSE(doc["memory"]["fits"].get<bool>());
  EXPECT_GT(doc["memory"]["peak_bytes"].get<double>(), doc["memory"]["hbm_bytes"].get<double>());
}

TEST(SimulateCliTest, SmallModelFits) {
  std::string args = "samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json" + std::string(kH100) +
                     " --world-size 8 --seq-len 8192 --recompute full";
  auto r = RunCli("simulate " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verdict: FITS"), std::string::npos) << r.output;
  Json doc = RunJson(args);
  EXPECT_EQ(SchemaErrors(schemas::k_simulate_report_schema_json, doc), "");
  EXPECT_TRUE(doc["memory"]["fits"].get<bool>());
  EXPECT_EQ(doc["layout"]["sp"], 4);
}

TEST(SimulateCliTest, BiggerHbmChangesOnlyTheVerdictInputs) {
  std::string base = std::string(kFolding) + kMixtral + " --world-size 8";
  Json h100 = RunJson(base + kH100);
  Json h200 = RunJson(base + " --cluster samples/clusters/h200.json");
  EXPECT_EQ(h200["memory"]["hbm_bytes"], 141e9);
  EXPECT_EQ(h100["memory"]["peak_bytes"], h200["memory"]["peak_bytes"]);  // same plan, same bytes
}

TEST(SimulateCliTest, ConfigErrorsExitOne) {
  auto r = RunCli("simulate samples/configs/invalid/folding-rejected.json" + std::string(kMixtral) + kH100 +
                  " --world-size 8");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("[ep-fold-zero3]"), std::string::npos) << r.output;
  // The batch triple checked against the simulated world size.
  EXPECT_EQ(RunCli(std::string("simulate ") + kFolding + kMixtral + kH100 + " --world-size 16").exit_code, 1);
  EXPECT_EQ(RunCli("simulate samples/configs/invalid/json-syntax.json" + std::string(kMixtral) + kH100).exit_code, 1);
}

TEST(SimulateCliTest, UsageAndInputProblemsExitTwo) {
  std::string f = std::string("simulate ") + kFolding;
  EXPECT_EQ(RunCli(f + kH100).exit_code, 2);                               // no --model
  EXPECT_EQ(RunCli(f + kMixtral).exit_code, 2);                            // no --cluster
  EXPECT_EQ(RunCli(f + kMixtral + " --cluster does/not/exist.json").exit_code, 2);
  EXPECT_EQ(RunCli(f + " --model does/not/exist.json" + kH100).exit_code, 2);
  EXPECT_EQ(RunCli("simulate does/not/exist.json" + std::string(kMixtral) + kH100).exit_code, 2);
  EXPECT_EQ(RunCli(f + kMixtral + kH100 + " --recompute some").exit_code, 2);
  EXPECT_EQ(RunCli(f + kMixtral + kH100 + " --convention megatron").exit_code, 2);
  EXPECT_EQ(RunCli(f + kMixtral + kH100 + " --format sarif").exit_code, 2);
  EXPECT_EQ(RunCli(f + kMixtral + kH100 + " --world-size 8 --nodes 2 --gpus-per-node 8").exit_code, 2);
  // "auto" batch values need --set.
  auto hf = RunCli("simulate samples/configs/hf-auto.json" + std::string(kMixtral) + kH100);
  EXPECT_EQ(hf.exit_code, 2) << hf.output;
  EXPECT_NE(hf.output.find("--set train_batch_size=N"), std::string::npos) << hf.output;
  // A file that is not a cluster description: the message names the file and the JSON pointer.
  auto bad = RunCli(f + kMixtral + " --cluster samples/models/tiny-llama.json");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("tiny-llama.json:1:1: /name: required key is missing"), std::string::npos) << bad.output;
}

TEST(SimulateCliTest, NodesAloneTakesGpusPerNodeFromTheCluster) {
  Json doc = RunJson(std::string(kFolding) + kMixtral + kH100 + " --nodes 1");
  EXPECT_EQ(doc["layout"]["world_size"], 8);
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

constexpr const char* kGpt3 =
    "simulate samples/configs/gpt3-ptdp.json --model samples/models/gpt3-175b-megatron.json"
    " --cluster samples/clusters/a100-80gb.json --seq-len 2048";

TEST(SimulateEngineCliTest, MegatronFlagsAreCheckedAgainstEachOther) {
  struct Case {
    std::string flags, says;
  };
  for (const Case& c : {Case{" --world-size 64 --tp 8", "--tp is the tensor-parallel size"},
                        Case{" --world-size 64 --megatron-sp", "--megatron-sp needs --engine"},
                        Case{" --world-size 64 --engine megatron-lm --megatron-sp", "--tp of 2 or more"},
                        Case{" --world-size 64 --engine megatron-deepspeed --tp 8 --pp 8 --virtual-stages 2",
                             "--engine megatron-lm"},
                        Case{" --world-size 64 --engine megatron-lm --tp 8 --virtual-stages 2", "--pp > 1"},
                        Case{" --world-size 64 --engine megatron-lm --tp 8 --pp 8 --virtual-stages 5",
                             "divisible by pp x virtual stages"},
                        Case{" --world-size 64 --deepspeed-version 0.x", "--deepspeed-version"},
                        Case{" --world-size 64 --engine megatron", "--engine"}}) {
    auto r = testing::RunCli(std::string(kGpt3) + c.flags);
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.flags << "\n" << r.output;
  }
}

TEST(SimulateEngineCliTest, MegatronTensorParallelDividesTheBatch) {
  // train_batch_size 1536 with Megatron's tp 8 and pp 12 on 1536 GPUs: dp 16, 96 micro-steps
  // (DeepSpeed takes the data-parallel size from the mpu).
  auto r = testing::RunCli(std::string(kGpt3) +
                               " --world-size 1536 --pp 12 --engine megatron-lm --tp 8 --format json",
                           false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(r.output);
  EXPECT_EQ(doc["layout"]["tp"], 8);
  EXPECT_EQ(doc["layout"]["dp"], 16);
  EXPECT_EQ(doc["engine"]["name"], "megatron-lm");
  EXPECT_GT(doc["time"]["pipeline_bubble_seconds"].get<double>(), 0);
  EXPECT_GT(doc["time"]["exposed_communication_seconds"]["send_recv"].get<double>(), 0);
  EXPECT_EQ(testing::SchemaErrors(schemas::k_simulate_report_schema_json, doc), "");
  // Interleaving 2 virtual stages shrinks the bubble.
  auto v = testing::RunCli(std::string(kGpt3) +
                               " --world-size 1536 --pp 12 --engine megatron-lm --tp 8 --virtual-stages 2"
                               " --format json",
                           false);
  ASSERT_EQ(v.exit_code, 0) << v.output;
  EXPECT_LT(Json::parse(v.output)["time"]["pipeline_bubble_seconds"].get<double>(),
            doc["time"]["pipeline_bubble_seconds"].get<double>());
}

TEST(CalibrateCliTest, WritesTheFittedClusterAndKeepsExistingFiles) {
  char dir_template[] = "/tmp/dsp-calibrate-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string out = dir + "/fitted.json";
  const std::string cmd = "calibrate samples/runs/published-runs.tsv --cluster "
                          "samples/clusters/selene-a100-80gb-calibrated.json --fit efficiency.matmul -o " + out;
  auto r = testing::RunCli(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("mean |error|"), std::string::npos);
  Json fitted = Json::parse(ReadFile(out).value());
  EXPECT_TRUE(fitted.contains("_calibration"));
  EXPECT_NEAR(fitted["efficiency"]["matmul"].get<double>(), 0.742, 0.01);
  // The notes of the input survive.
  EXPECT_TRUE(fitted["gpu"].contains("_sm_count_source"));
  // A second run does not replace the file without --force.
  auto again = testing::RunCli(cmd);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("--force"), std::string::npos);
  EXPECT_EQ(testing::RunCli(cmd + " --force").exit_code, 0);
  std::filesystem::remove_all(dir);
}

TEST(CalibrateCliTest, BadInputIsAUsageError) {
  char dir_template[] = "/tmp/dsp-calibrate-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string bad = dir + "/bad.tsv";
  ASSERT_TRUE(WriteFileAtomic(bad, "run_id\tmeasured_iter_s\nx\t1.0\n").ok());
  auto r = testing::RunCli("calibrate " + bad + " --cluster samples/clusters/a100-80gb.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("line 2"), std::string::npos) << r.output;
  auto missing = testing::RunCli("calibrate " + dir + "/none.tsv --cluster samples/clusters/a100-80gb.json");
  EXPECT_EQ(missing.exit_code, 2);
  auto fit = testing::RunCli("calibrate samples/runs/published-runs.tsv --cluster samples/clusters/a100-80gb.json"
                             " --fit efficiency.typo");
  EXPECT_EQ(fit.exit_code, 2);
  EXPECT_NE(fit.output.find("unknown figure"), std::string::npos) << fit.output;
  std::filesystem::remove_all(dir);
}

// Inputs at the edge of double's or int64's range are refused with the figure named, so no
// report ever carries inf or null (issue 16: a tiny peak FLOP/s made the step time infinite and
// the schedule's SVG loop on its axis ticks).
TEST(SimulateCliTest, FiguresOutsideWhatAMachineHasAreRefused) {
  Json cluster = Json::parse(ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-sxm.json").value(),
                             nullptr, true, true);
  cluster["gpu"]["peak_bf16_flops_per_second"] = 1e-300;
  const auto path = std::filesystem::temp_directory_path() / "ds-plan-tiny-flops.json";
  ASSERT_TRUE(WriteFileAtomic(path.string(), cluster.dump()).ok());
  const std::string llama = " --model samples/models/llama-3-8b.json --world-size 8";
  auto r = RunCli("simulate samples/configs/autosp-sp4.json" + llama + " --cluster " + path.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/gpu/peak_bf16_flops_per_second: 1e-300 is outside"), std::string::npos) << r.output;
  auto s = RunCli("visualize schedule samples/configs/autosp-sp4.json" + llama + kH100 +
                  " --slow-rank 3:1e308 -o /tmp/ds-plan-never.svg --force");
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.output.find("0 < FACTOR <= 1000"), std::string::npos) << s.output;
  EXPECT_EQ(RunCli("simulate samples/configs/autosp-sp4.json" + llama + kH100 + " --seq-len 9000000000000000000").exit_code, 2);
  auto huge = RunCli("simulate samples/configs/autosp-sp4.json" + llama + kH100 +
                     " --set train_micro_batch_size_per_gpu=4000000000000000000"
                     " --set train_batch_size=8000000000000000000 --set gradient_accumulation_steps=1");
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_NE(huge.output.find("beyond what the cost model handles"), std::string::npos) << huge.output;
  std::filesystem::remove(path);
}

// The config is read once, so a pipe works (a second read of /dev/stdin would see nothing).
TEST(SimulateCliTest, AConfigOnStandardInputIsReadOnce) {
  auto r = RunCli("simulate /dev/stdin --model samples/models/llama-3-8b.json" + std::string(kH100) +
                  " --world-size 8 < samples/configs/autosp-sp4.json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verdict: FITS"), std::string::npos) << r.output;
}

// bf16 on a GPU without bf16 tensor cores (issue 33 item 7): the cluster file's compute_capability
// reaches validate's precision-bf16-unsupported-gpu, and simulate shows the finding itself (validate
// alone has no cluster). runtime/engine.py DeepSpeedEngine._do_sanity_check.
TEST(SimulateCliTest, Bf16OnAGpuWithoutBf16IsShown) {
  const std::string dir = ::testing::TempDir() + "/bf16_v100";
  std::filesystem::create_directories(dir);
  std::string cluster = ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/clusters/a100-80gb.json").value();
  const size_t at = cluster.find("\"compute_capability\": \"8.0\"");
  ASSERT_NE(at, std::string::npos);
  cluster.replace(at, std::string("\"compute_capability\": \"8.0\"").size(), "\"compute_capability\": \"7.0\"");
  ASSERT_TRUE(WriteFileAtomic(dir + "/v100.json", cluster).ok());
  const std::string run = "simulate samples/configs/zero3-offload.json --model samples/models/llama-3.2-1b.json --world-size 8 --cluster ";
  auto v100 = RunCli(run + dir + "/v100.json");
  EXPECT_EQ(v100.exit_code, 0) << v100.output;
  EXPECT_NE(v100.output.find("note: bf16 on A100 SXM4 80GB (compute capability 7.0), which has no bf16 tensor cores"),
            std::string::npos)
      << v100.output;
  auto a100 = RunCli(run + "samples/clusters/a100-80gb.json");
  EXPECT_EQ(a100.output.find("precision-bf16-unsupported-gpu"), std::string::npos) << a100.output;
  // A malformed capability is refused with its pointer: a letter, or a minor part that is no digit.
  {
    std::string dots = cluster;
    dots.replace(dots.find("\"7.0\""), 5, "\"1..\"");
    ASSERT_TRUE(WriteFileAtomic(dir + "/dots.json", dots).ok());
    EXPECT_EQ(RunCli(run + dir + "/dots.json").exit_code, 2);
  }
  cluster.replace(cluster.find("\"7.0\""), 5, "\"sm70\"");
  ASSERT_TRUE(WriteFileAtomic(dir + "/bad.json", cluster).ok());
  auto bad = RunCli(run + dir + "/bad.json");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("/gpu/compute_capability: \"sm70\" is not a CUDA compute capability"), std::string::npos)
      << bad.output;
}

// Every prediction carries the validation band of its engine and GPU class (issue 32 item 5,
// sim/report/error_band.cc), in the text and in the JSON; tune and plan carry it too.
TEST(SimulateCliTest, PredictionsCarryTheirErrorBand) {
  const std::string run = "samples/configs/autosp-sp4.json --model samples/models/llama-3-8b.json --world-size 8";
  auto text = RunCli("simulate " + run + kH100);
  EXPECT_NE(text.output.find("  accuracy \u00b1"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("measured deepspeed runs on H100; worst"), std::string::npos) << text.output;
  auto json = RunCli("simulate " + run + kH100 + " --format json", false);
  const Json acc = Json::parse(json.output)["accuracy"];
  EXPECT_EQ(acc["engine"], "deepspeed");
  EXPECT_EQ(acc["gpu_class"], "H100");
  EXPECT_EQ(acc["validated"], true);
  EXPECT_GT(acc["step_time"]["runs"].get<int>(), 0);
  EXPECT_GT(acc["step_time"]["mean_abs_error"].get<double>(), 0);
  // No measured run on a B200: said so, not a number.
  auto b200 = RunCli("simulate " + run + " --cluster samples/clusters/b200.json --format json", false);
  EXPECT_EQ(Json::parse(b200.output)["accuracy"]["validated"], false);
  EXPECT_TRUE(Json::parse(b200.output)["accuracy"]["step_time"].is_null());
  auto plan = RunCli("plan " + run + kH100 + " -o -", false);
  EXPECT_EQ(Json::parse(plan.output)["accuracy"]["gpu_class"], "H100");
  auto tune = RunCli("tune --model samples/models/llama-3-8b.json --world-size 8 --format json" + std::string(kH100), false);
  EXPECT_EQ(Json::parse(tune.output)["accuracy"][0]["engine"], "deepspeed") << tune.output.substr(0, 300);
}

// DeepSpeed's pydantic sections coerce "stage": "3" to 3 and, before 0.18.6 (which compares the raw
// value with 0 first: deepspeed/__init__.py), "autotp_size": "2" to 2 (validate warns: write them
// as integers); simulate, plan and groups plan what DeepSpeed then runs, not ZeRO-0 and tp 1
// (issue 36: 1,498.84 GB instead of 515.29 GB for Llama-3-70B on 8 GPUs).
TEST(SimulateCliTest, ValuesPydanticCoercesArePlannedAsCoerced) {
  const std::string dir = ::testing::TempDir() + "/pydantic_coerce";
  std::filesystem::create_directories(dir);
  const std::string quoted = dir + "/quoted.json", plain = dir + "/plain.json";
  ASSERT_TRUE(WriteFileAtomic(quoted, R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": "3"}, "tensor_parallel": {"autotp_size": "2"}})").ok());
  ASSERT_TRUE(WriteFileAtomic(plain, R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3}, "tensor_parallel": {"autotp_size": 2}})").ok());
  const std::string flags = " --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --world-size 8"
                            " --deepspeed-version 0.18.5";
  // Read through /dev/stdin so both reports name the same file: the bytes must be equal.
  auto q = RunCli("simulate /dev/stdin" + flags + " < " + quoted, /*merge_stderr=*/false);
  auto p = RunCli("simulate /dev/stdin" + flags + " < " + plain, /*merge_stderr=*/false);
  ASSERT_EQ(q.exit_code, 0) << q.output;
  // Equal but for the count of validate's warnings, which has the two coercions more.
  auto without_count = [](std::string text) {
    const size_t at = text.find("  note: the config has ");
    if (at != std::string::npos) text.erase(at, text.find('\n', at) - at + 1);
    return text;
  };
  auto warnings = [](const std::string& text) {
    const size_t at = text.find("note: the config has ");
    return at == std::string::npos ? 0 : std::atoi(text.c_str() + at + 21);
  };
  EXPECT_EQ(warnings(q.output), warnings(p.output) + 2) << q.output << p.output;
  EXPECT_EQ(without_count(q.output), without_count(p.output));
  EXPECT_NE(q.output.find("tp=2 dp=4 sp=1 pp=1 zero=3"), std::string::npos) << q.output;
  auto warned = RunCli("validate " + quoted + " --world-size 8 --deepspeed-version 0.18.5");
  EXPECT_EQ(warned.exit_code, 0) << warned.output;
  EXPECT_NE(warned.output.find("pydantic coerces it"), std::string::npos) << warned.output;
  // From 0.18.6 the quoted autotp_size is a TypeError in deepspeed.initialize.
  auto refused = RunCli("validate " + quoted + " --world-size 8");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("[tp-autotp-size-invalid]"), std::string::npos) << refused.output;
  auto groups = RunCli("groups " + quoted + " --world-size 8");
  EXPECT_EQ(groups.exit_code, 0) << groups.output;
  EXPECT_NE(groups.output.find("tp=2"), std::string::npos) << groups.output;
}

}  // namespace
}  // namespace dsp
