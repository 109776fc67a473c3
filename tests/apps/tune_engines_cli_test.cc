// SPDX-License-Identifier: Apache-2.0
// ds-plan tune per engine (each in its own space: context and expert parallelism, FP8, FSDP2's
// stages under a pipeline) and --engines, which ranks the frameworks side by side; an emitted plan
// simulates as it was ranked.
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "core/util/file_io.h"
#include "tests/apps/cli_test_util.h"
#include "tests/apps/report_schema_util.h"

namespace dsp {
namespace {

using testing::RunCli;
using testing::SchemaErrors;

constexpr const char* kLlama70b =
    " --model samples/models/llama-3-70b.json --cluster samples/clusters/h100-sxm.json --nodes 8 --gpus-per-node 8";

Json Tune(const std::string& flags) {
  auto r = RunCli("tune" + std::string(kLlama70b) + flags + " --format json", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Json doc = Json::parse(r.output, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.output;
  EXPECT_EQ(SchemaErrors(schemas::k_tune_report_schema_json, doc), "") << doc.dump(2);
  return doc;
}

TEST(TuneEnginesCliTest, EachEngineSearchesItsOwnSpace) {
  // FSDP2: ZeRO 2 or 3 (reshard after forward or not) and torchao float8; no ZeRO-1. Its ZeRO-3
  // under a pipeline is SimulateEnginesCliTest's.
  bool fp8 = false, sharded = false;
  const Json fsdp2 = Tune(" --engine fsdp2 --top 200");
  for (const Json& p : fsdp2["plans"]) {
    EXPECT_EQ(p["engine"], "fsdp2");
    EXPECT_NE(p["zero_stage"], 1);
    fp8 = fp8 || p["precision"] == "fp8";
    sharded = sharded || p["zero_stage"].get<int>() >= 2;
  }
  EXPECT_TRUE(fp8 && sharded);
  // Async TP (--tp-comm-overlap) is a compiled-graph pass: searched with --torch-compile only,
  // and only for plans with TP.
  auto overlapped = [](const Json& doc) {
    int n = 0;
    for (const Json& p : doc["plans"]) {
      if (p["tp_comm_overlap"].get<bool>()) {
        ++n;
        EXPECT_GT(p["layout"]["tp"].get<int>(), 1) << p.dump();
      }
    }
    return n;
  };
  EXPECT_EQ(overlapped(fsdp2), 0);
  EXPECT_GT(overlapped(Tune(" --engine fsdp2 --torch-compile --top 200")), 0);
  // Inductor's pass fuses PyTorch's matmuls, not TransformerEngine's (simulate refuses the pair).
  EXPECT_EQ(overlapped(Tune(" --engine fsdp2 --torch-compile --te-modules --top 200")), 0);
  const Json deepspeed = Tune(" --engine deepspeed --top 200");
  for (const Json& p : deepspeed["plans"]) {
    EXPECT_FALSE(p["layout"]["pp"].get<int>() > 1 && p["zero_stage"].get<int>() >= 2) << p.dump();
    EXPECT_NE(p["precision"], "fp8");
  }
  // Megatron-Core at 32K tokens: context parallelism with TP, the distributed optimizer at most.
  bool cp_with_tp = false;
  const Json megatron = Tune(" --engine megatron-lm --seq-len 32768 --global-batch 64 --top 20");
  for (const Json& p : megatron["plans"]) {
    EXPECT_LE(p["zero_stage"].get<int>(), 1);
    cp_with_tp = cp_with_tp || (p["layout"]["sp"].get<int>() > 1 && p["layout"]["tp"].get<int>() > 1);
  }
  EXPECT_TRUE(cp_with_tp);
}

TEST(TuneEnginesCliTest, EnginesRanksTheFrameworksSideBySideWithEachOnesBest) {
  const Json doc = Tune(" --engines deepspeed,fsdp2,megatron-lm --top 3");
  std::set<std::string> engines;
  double previous = 1e300;
  for (const Json& p : doc["plans"]) {
    engines.insert(p["engine"].get<std::string>());
    if (!p["below_ranking"].get<bool>()) {
      EXPECT_LE(p["tokens_per_second"].get<double>(), previous);
      previous = p["tokens_per_second"].get<double>();
    }
  }
  EXPECT_EQ(engines, (std::set<std::string>{"deepspeed", "fsdp2", "megatron-lm"}));
  auto both = RunCli("tune" + std::string(kLlama70b) + " --engine fsdp2 --engines deepspeed,fsdp2");
  EXPECT_EQ(both.exit_code, 2) << both.output;
}

TEST(TuneEnginesCliTest, AnEmittedPlanOfAnotherEngineSimulatesAsRanked) {
  const auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-engines-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  auto tuned = RunCli("tune" + std::string(kLlama70b) + " --engine megatron-lm --top 1 --emit-config " + out);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  auto simulated = RunCli("simulate " + out + kLlama70b, false);
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  EXPECT_NE(simulated.output.find("engine   megatron-lm"), std::string::npos) << simulated.output;
  // validate checks the batch against the layout _ds_plan records (Megatron's tp, pp, cp) and says so.
  auto validated = RunCli("validate " + out + " --world-size 64");
  EXPECT_EQ(validated.exit_code, 0) << validated.output;
  EXPECT_NE(validated.output.find("from the config's _ds_plan"), std::string::npos) << validated.output;
  // groups builds the emitted plan's groups (Megatron's layout, its tp and pp) and visualize graph
  // validates it the same way; both say what they took from the note.
  auto groups = RunCli("groups " + out + " --world-size 64 --format json", false);
  ASSERT_EQ(groups.exit_code, 0) << groups.output;
  const Json g = Json::parse(groups.output);
  EXPECT_EQ(g["rank_layout"], "megatron") << g.dump();
  const Json simulated_layout = Json::parse(RunCli("simulate " + out + kLlama70b + " --format json", false).output)["layout"];
  EXPECT_EQ(g["layout"]["tp"], simulated_layout["tp"]);
  EXPECT_EQ(g["layout"]["pp"], simulated_layout["pp"]);
  auto noted = RunCli("groups " + out + " --world-size 64");
  EXPECT_NE(noted.output.find("from the config's _ds_plan"), std::string::npos) << noted.output;
  auto graph = RunCli("visualize graph " + out + " --model samples/models/llama-3-70b.json --world-size 64 -o " +
                      (dir / "g.json").string());
  EXPECT_EQ(graph.exit_code, 0) << graph.output;
  EXPECT_NE(graph.output.find("not that engine's"), std::string::npos) << graph.output;
  // A --pp given on the command line wins over the note (and then the batch no longer adds up).
  auto given = RunCli("validate " + out + " --world-size 64 --pp 1");
  EXPECT_EQ(given.output.find(", pp "), std::string::npos) << given.output;
  EXPECT_EQ(given.exit_code, 1) << given.output;
  std::filesystem::remove_all(dir);
}

// Megatron MoE plans with TP carry their expert-tensor-parallel size (etp 1 or tp) and grouped
// experts in _ds_plan: simulate takes them and gives the step tune ranked.
TEST(TuneEnginesCliTest, AMegatronMoePlanRecordsItsExpertTensorParallelSize) {
  const auto dir = std::filesystem::temp_directory_path() / ("ds-plan-tune-moe-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "best.json").string();
  const std::string moe = " --model samples/models/qwen3-30b-a3b.json --cluster samples/clusters/h100-sxm.json"
                          " --nodes 4 --gpus-per-node 8";
  auto tuned = RunCli("tune" + moe + " --engine megatron-lm --top 40 --format json --emit-config " + out, false);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  const Json report = Json::parse(tuned.output);
  EXPECT_EQ(SchemaErrors(schemas::k_tune_report_schema_json, report), "");
  std::set<int64_t> etps;
  for (const Json& p : report["plans"]) {
    if (p["layout"]["tp"].get<int64_t>() > 1 && p["layout"]["ep"].get<int64_t>() > 1) {
      EXPECT_TRUE(p["megatron_sp"].get<bool>()) << p.dump();  // MoELayer refuses TP without SP
      etps.insert(p["layout"]["etp"].get<int64_t>());
    }
  }
  EXPECT_FALSE(etps.empty());
  const Json best = report["plans"][0];
  const Json config = Json::parse(*ReadFile(out));
  EXPECT_EQ(config["_ds_plan"]["moe_grouped_gemm"], true);  // every Megatron MoE plan is priced grouped
  if (best["layout"]["ep"].get<int64_t>() > 1) {
    EXPECT_EQ(config["_ds_plan"]["expert_tensor_parallel_size"], best["layout"]["etp"]);
  }
  auto simulated = RunCli("simulate " + out + moe + " --format json", false);
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  const Json sim = Json::parse(simulated.output);
  EXPECT_EQ(sim["layout"]["etp"], best["layout"]["etp"]);
  EXPECT_NEAR(sim["time"]["step_seconds"].get<double>(), best["step_seconds"].get<double>(), 1e-9);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dsp
