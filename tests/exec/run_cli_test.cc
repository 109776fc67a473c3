// SPDX-License-Identifier: Apache-2.0
// `ds-plan run` end to end: the real torchrun (scripts/torchrun) starting 4 worker processes on CPU
// (Gloo), and manual launches for what torchrun would hide (which rank is missing or different).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/exec/run_cli_test_util.h"

namespace dsp {
namespace {

using namespace run_test;  // NOLINT: the shared torchrun helpers (run_cli_test_util.h)

// The one case for a build without LibTorch (checked with -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON).
TEST(RunCliTest, WithoutLibTorchRunSaysHowToEnableIt) {
  if (exec::HaveTorch()) GTEST_SKIP() << "this build has LibTorch; the other RunCliTest cases cover run";
  auto r = RunCli("run samples/configs/run/dp1.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r.output, "apt-get install libtorch-dev libgloo-dev python3-torch")) << r.output;
  EXPECT_TRUE(Has(r.output, "scripts/setup.sh")) << r.output;
}

TEST(RunCliTest, OutsideTorchrunIsAUsageErrorThatSaysHowToLaunch) {
  SKIP_WITHOUT_TORCH();
  auto r = RunCli("run samples/configs/run/tp2-dp2-zero1.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r.output, "is not set")) << r.output;
  EXPECT_TRUE(Has(r.output, "torchrun")) << r.output;
}

TEST(RunCliTest, Tp2Dp2Zero1MatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --steps 3");
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "ds-plan run: dp2 x tp2, zero-1 on 4 ranks (gloo)")) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "step 3: loss")) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "parity: ok (3 steps")) << t.r.output;
  // Each step's line streams (stderr) as it completes, before the report.
  const size_t first = t.r.output.find("ds-plan run: step 1/3  loss ");
  const size_t last = t.r.output.find("ds-plan run: step 3/3  loss ");
  ASSERT_NE(first, std::string::npos) << t.r.output;
  ASSERT_NE(last, std::string::npos) << t.r.output;
  EXPECT_LT(first, last);
  EXPECT_LT(last, t.r.output.find("parity: ok (3 steps"));
  EXPECT_TRUE(Has(t.r.output.substr(first, 120), "parity ok")) << t.r.output;
}

TEST(RunCliTest, Dp4Zero2JsonReportMatchesItsSchema) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/dp4-zero2.json --steps 2 --format json", false);
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  Json doc = ParseReport(t.r.output);
  EXPECT_EQ(doc["sizes"]["zero_stage"], 2);
  EXPECT_EQ(doc["sizes"]["dp"], 4);
  EXPECT_EQ(doc["step_reports"].size(), 2u);
  EXPECT_TRUE(doc["ok"].get<bool>());
  // The gradients really were compared: the reference gradients are not all zero.
  for (const auto& f : doc["step_reports"][0]["families"]) EXPECT_LT(f["grad_max_rel"].get<double>(), 1e-4) << f;
}

TEST(RunCliTest, UlyssesSp4MatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/sp4-zero1.json --steps 2");
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "dp1 x sp4, zero-1")) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "parity: ok")) << t.r.output;
}

TEST(RunCliTest, Ep4WithoutTpMatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/ep4-zero1.json --model samples/models/tiny-moe.json --steps 2 --format json",
                    false);
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  Json doc = ParseReport(t.r.output);
  EXPECT_EQ(doc["sizes"]["ep"], 4);
  std::vector<std::string> families;
  for (const auto& f : doc["step_reports"][0]["families"]) families.push_back(f["family"]);
  EXPECT_NE(std::find(families.begin(), families.end(), "router"), families.end());
  EXPECT_NE(std::find(families.begin(), families.end(), "routed_experts"), families.end());
  EXPECT_TRUE(doc["ok"].get<bool>());
}

// ZeRO-3 (exec/optim/zero3.h): every parameter partitioned over its family's group, gathered for
// each use and again in backward, its gradient reduce-scattered there. Dense dp4, AutoTP tp2 x dp2
// (the tp-sharded parameters partitioned again over dp), and AutoEP with the routed experts
// partitioned over edp (ep4 on 4 ranks: edp1; ep2: edp2).
TEST(RunCliTest, Zero3MatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  auto dp = Torchrun(4, "samples/configs/run/dp4-zero3.json --steps 3 --format json", false);
  EXPECT_EQ(dp.r.exit_code, 0) << dp.r.output;
  Json doc = ParseReport(dp.r.output);
  EXPECT_EQ(doc["sizes"]["zero_stage"], 3);
  EXPECT_TRUE(doc["ok"].get<bool>());
  for (const auto& f : doc["step_reports"][2]["families"]) EXPECT_LT(f["grad_max_rel"].get<double>(), 1e-4) << f;
  ExpectParityOk("samples/configs/run/tp2-dp2-zero3.json --steps 2", "ds-plan run: dp2 x tp2, zero-3 on 4 ranks (gloo)");
  ExpectParityOk("samples/configs/run/ep4-zero3.json --model samples/models/tiny-moe.json --steps 2",
                 "dp4, ep4 (edp1), zero-3");
}

// The routed experts' gradients summed over dp (ranks holding other experts) instead of their edp
// group: step 1 fails in routed_experts alone, every other family still matches.
TEST(RunCliTest, ExpertGradsOverDpFailsInTheRoutedExperts) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/ep4-zero3.json --model samples/models/tiny-moe.json --steps 1 "
                       "--inject expert-grads-over-dp --format json", false);
  EXPECT_NE(t.r.exit_code, 0) << t.r.output;
  Json doc = ParseReport(t.r.output);
  EXPECT_FALSE(doc["ok"].get<bool>());
  EXPECT_EQ(doc["first_failure"]["families"], Json::array({"routed_experts"})) << doc["first_failure"];
  // A plan without ZeRO-3 and experts has nothing for the fault to break.
  auto refused = Torchrun(4, "samples/configs/run/dp4-zero2.json --inject expert-grads-over-dp");
  EXPECT_NE(refused.r.exit_code, 0);
  EXPECT_TRUE(Has(refused.r.output, "--inject expert-grads-over-dp breaks ZeRO-3's expert partitioning")) << refused.r.output;
}

// Activation checkpointing (exec/model/checkpoint.h): every decoder layer of the sharded model
// keeps its input (in a host copy with cpu_checkpointing) and runs again in backward, collectives
// included. In fp32 the run must be the same run: every step's loss and every family's
// differences identical to the run without recompute, on AutoTP with cpu_checkpointing, on
// ZeRO-3, on AutoEP and through pipeline stages.
TEST(RunCliTest, RecomputeChangesNoNumber) {
  SKIP_WITHOUT_TORCH();
  for (const std::string& args : {std::string("samples/configs/run/tp2-dp2-cpu-checkpointing.json"),
                                 std::string("samples/configs/run/dp4-zero3.json"),
                                 std::string("samples/configs/run/ep4-zero1.json --model samples/models/tiny-moe.json")}) {
    auto plain = Torchrun(4, args + " --steps 2 --format json", false);
    auto recomputed = Torchrun(4, args + " --steps 2 --recompute full --format json", false);
    ASSERT_EQ(plain.r.exit_code, 0) << plain.r.output;
    ASSERT_EQ(recomputed.r.exit_code, 0) << recomputed.r.output;
    Json a = ParseReport(plain.r.output), b = ParseReport(recomputed.r.output);
    EXPECT_EQ(a["step_reports"], b["step_reports"]) << args;
    EXPECT_EQ(a["recompute"]["mode"], "none");
    EXPECT_EQ(b["recompute"]["recomputed_layers"], 2 * 2) << "2 layers x 2 steps on rank 0: " << args;
    const bool offload = args.find("cpu-checkpointing") != std::string::npos;
    EXPECT_EQ(b["recompute"]["mode"], offload ? "full, cpu_checkpointing" : "full") << args;
    EXPECT_EQ(b["recompute"]["offloaded_inputs"], offload ? 4 : 0) << args;
  }
  // Through four pipeline stages: rank 0 (stage 0, one layer) recomputes once per micro-batch.
  auto plain = Torchrun(4, "samples/configs/run/pp4.json --pp 4 --steps 2 --format json", false);
  auto recomputed = Torchrun(4, "samples/configs/run/pp4.json --pp 4 --steps 2 --recompute full --format json", false);
  ASSERT_EQ(plain.r.exit_code, 0) << plain.r.output;
  ASSERT_EQ(recomputed.r.exit_code, 0) << recomputed.r.output;
  Json a = ParseReport(plain.r.output), b = ParseReport(recomputed.r.output);
  EXPECT_EQ(a["step_reports"], b["step_reports"]);
  EXPECT_EQ(b["recompute"]["recomputed_layers"], 1 * 6 * 2) << "1 layer x 6 micro-batches x 2 steps on rank 0";
}

// Two models in one process (--model twice; teacher/student, actor/reference, DeepSpeed PR
// #8241): an MHA model (pythia: 4/4 kv heads) and a GQA one (qwen3: 4/2) sharded by the same plan,
// each with its own shards, optimizer state and reference, trained step by step side by side.
// Module-level state that one model's sharding leaves for the other (what #8241 fixed in
// tp_shard's kv-head globals) would break the second model's parity.
TEST(RunCliTest, TwoModelsInOneProcessBothKeepParity) {
  SKIP_WITHOUT_TORCH();
  for (const char* config : {"samples/configs/run/tp2-dp2-zero1.json", "samples/configs/run/dp4-zero3.json",
                             "samples/configs/run/pp2-tp2.json --pp 2"}) {
    auto t = Torchrun(4, std::string(config) + " --model samples/models/pythia-160m.json --model samples/models/qwen3-8b.json "
                                               "--steps 2 --format json",
                      false);
    ASSERT_EQ(t.r.exit_code, 0) << config << "\n" << t.r.output;
    Json doc = ParseReport(t.r.output);
    EXPECT_TRUE(doc["ok"].get<bool>());
    EXPECT_EQ(doc["tiny_model"]["kv_heads"], 4);
    ASSERT_EQ(doc["companions"].size(), 1u);
    const Json& second = doc["companions"][0];
    EXPECT_EQ(second["model"], "samples/models/qwen3-8b.json");
    EXPECT_EQ(second["tiny_model"]["kv_heads"], 2);
    EXPECT_TRUE(second["ok"].get<bool>());
    EXPECT_EQ(second["step_reports"].size(), 2u);
  }
  // A fault breaks both, and each says where.
  auto broken = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --model samples/models/pythia-160m.json "
                            "--model samples/models/qwen3-8b.json --steps 1 --inject no-copy-allreduce --format json",
                         false);
  Json doc = ParseReport(broken.r.output);
  EXPECT_FALSE(doc["ok"].get<bool>());
  EXPECT_EQ(doc["companions"][0]["first_failure"]["step"], 1);
}

// Pipeline parallelism (--pp N): the decoder split over the stages (embedding on the first; final
// norm, lm_head and the loss on the last), each stage executing DeepSpeed's TrainSchedule stream
// (core/plan/pipe_schedule.h) over gradient_accumulation_steps micro-batches, activations and
// gradients through two-rank links between neighbours; with data parallelism and with tensor
// parallelism inside each stage; and four stages over 6 micro-batches, so that the 1F1B steady
// state (forward of j+3 interleaved with backward of j on stage 0) runs.
TEST(RunCliTest, PipelineStagesMatchTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  ExpectParityOk("samples/configs/run/pp2-dp2.json --pp 2 --steps 2", "ds-plan run: dp2 x pp2, zero-1 on 4 ranks");
  ExpectParityOk("samples/configs/run/pp2-tp2.json --pp 2 --steps 2", "ds-plan run: dp1 x tp2 x pp2, zero-1 on 4 ranks");
  auto four = Torchrun(4, "samples/configs/run/pp4.json --pp 4 --steps 2");
  EXPECT_EQ(four.r.exit_code, 0) << four.r.output;
  EXPECT_TRUE(Has(four.r.output, "ds-plan run: dp1 x pp4, zero-1 on 4 ranks")) << four.r.output;
  EXPECT_TRUE(Has(four.r.output, "tiny model: 4 layers")) << four.r.output;
  EXPECT_TRUE(Has(four.r.output, "pipeline: 4 stages, 6 micro-batches per step, DeepSpeed's TrainSchedule: 18 schedule "
                                 "steps and 36 activation/gradient transfers"))
      << four.r.output;
  EXPECT_TRUE(Has(four.r.output, "parity: ok (2 steps")) << four.r.output;
  // A stale activation (the last stage reusing micro-batch j-1's input) fails at step 1, with two
  // stages and with four.
  for (const char* args : {"samples/configs/run/pp2-dp2.json --pp 2", "samples/configs/run/pp4.json --pp 4"}) {
    auto t = Torchrun(4, std::string(args) + " --steps 1 --inject pp-stale-activation --format json", false);
    EXPECT_NE(t.r.exit_code, 0) << args;
    Json doc = ParseReport(t.r.output);
    EXPECT_FALSE(doc["ok"].get<bool>()) << args;
    EXPECT_EQ(doc["first_failure"]["step"], 1) << args;
    EXPECT_FALSE(doc["step_reports"][0]["loss_ok"].get<bool>()) << args;
    // The config's gradient_accumulation_steps is what one step runs.
    EXPECT_EQ(doc["pipeline"]["micro_batches"], std::string(args).find("pp4") != std::string::npos ? 6 : 3) << args;
  }
  // Refused where the executor has no pipeline: the fault without --pp.
  auto refused = Torchrun(4, "samples/configs/run/dp4-zero2.json --inject pp-stale-activation");
  EXPECT_NE(refused.r.exit_code, 0);
  EXPECT_TRUE(Has(refused.r.output, "it needs --pp 2 or more")) << refused.r.output;
  // ... and with one micro-batch per step, where there is no previous activation to reuse.
  const std::filesystem::path one = std::filesystem::temp_directory_path() / ("dsp-pp-ga1-" + std::to_string(getpid()) + ".json");
  std::ofstream(one) << R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
                             "optimizer": {"type": "SGD", "params": {"lr": 0.05}}, "zero_optimization": {"stage": 1}})";
  auto single = Torchrun(4, one.string() + " --pp 2 --inject pp-stale-activation");
  EXPECT_NE(single.r.exit_code, 0);
  EXPECT_TRUE(Has(single.r.output, "gradient_accumulation_steps 2 or more")) << single.r.output;
  std::filesystem::remove(one);
}

TEST(RunCliTest, NoCopyAllreduceFaultFailsNamingTheFamilies) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --steps 1 --inject no-copy-allreduce --format json",
                    false);
  EXPECT_EQ(t.r.exit_code, 1) << t.r.output;
  Json doc = ParseReport(t.r.output);
  EXPECT_FALSE(doc["ok"].get<bool>());
  EXPECT_EQ(doc["fault"], "no-copy-allreduce");
  // The input gradient of every column projection is partial, so everything before the first
  // copy_to_tp in the backward pass is wrong; lm_head sits after the last one and stays exact.
  auto failing = doc["failing_families"].get<std::vector<std::string>>();
  for (const char* f : {"attention", "dense_mlp", "embedding", "norm"}) {
    EXPECT_NE(std::find(failing.begin(), failing.end(), f), failing.end()) << f;
  }
  EXPECT_EQ(std::find(failing.begin(), failing.end(), "lm_head"), failing.end());
  auto text = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --steps 1 --inject no-copy-allreduce");
  EXPECT_EQ(text.r.exit_code, 1);
  EXPECT_TRUE(Has(text.r.output, "parity: FAILED at step 1 in embedding, attention, dense_mlp, norm")) << text.r.output;
}

TEST(RunCliTest, FoldedTp2Ep4MatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json --steps 2");
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "dp2 x tp2, folded ep4 (edp1), zero-1")) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "parity: ok (2 steps")) << t.r.output;
}

// Each folding fault breaks exactly one reduction rule (auto_ep_folding.py autoep_folding_gradient_reduction_strategy), by a factor of
// tp = 2, so the first step must fail in exactly that family and nowhere else.
void ExpectFoldingFault(const std::string& fault, const std::string& family) {
  auto t = Torchrun(4, "samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json --steps 2 "
                       "--format json --inject " + fault, false);
  EXPECT_EQ(t.r.exit_code, 1) << t.r.output;
  Json doc = ParseReport(t.r.output);
  ASSERT_TRUE(doc["first_failure"].is_object()) << t.r.output;
  EXPECT_EQ(doc["first_failure"]["step"], 1);
  EXPECT_EQ(doc["first_failure"]["families"], Json::array({family})) << t.r.output;
  for (const auto& f : doc["step_reports"][0]["families"]) {
    if (f["family"] == family) {
      EXPECT_NEAR(f["grad_max_rel"].get<double>(), 1.0, 0.01) << "a factor of tp = 2";
    }
  }
}

TEST(RunCliTest, SkipTpCancelFailsInTheRoutedExperts) {
  SKIP_WITHOUT_TORCH();
  ExpectFoldingFault("skip-tp-cancel", "routed_experts");
}

TEST(RunCliTest, SumRouterGradsFailsInTheRouter) {
  SKIP_WITHOUT_TORCH();
  ExpectFoldingFault("sum-router-grads", "router");
}

// --dtype bf16: the sharded run and the reference both in bfloat16, judged with the bf16 tolerance
// (rtol 2^-7 x 16, atol 1e-3). The correct plans pass, well inside it; the faults still fail.
Json Bf16Run(const std::string& args, int expect_exit) {
  auto t = Torchrun(4, args + " --dtype bf16 --format json", false);
  EXPECT_EQ(t.r.exit_code, expect_exit) << t.r.output;
  Json doc = ParseReport(t.r.output);
  EXPECT_EQ(doc["dtype"], "bf16") << t.r.output;
  EXPECT_EQ(doc["tolerances"]["dtype"], "bf16");
  EXPECT_EQ(doc["tolerances"]["rtol"], 0.125);
  EXPECT_EQ(doc["tolerances"]["atol"], 1e-3);
  return doc;
}

// The largest relative gradient or weight difference of a passing bf16 run is bf16 rounding:
// above fp32's (so bf16 really ran) and well inside the tolerance.
void ExpectBf16Rounding(const Json& doc) {
  double worst = 0;
  for (const auto& s : doc["step_reports"]) {
    for (const auto& f : s["families"]) {
      worst = std::max({worst, f["grad_max_rel"].get<double>(), f["weight_max_rel"].get<double>()});
    }
  }
  EXPECT_GT(worst, 1e-4) << "bf16 rounding is far above fp32's";
  EXPECT_LT(worst, 0.125 / 2) << "at least a factor 2 inside the tolerance";
}

TEST(RunCliTest, Bf16Tp2Dp2Zero1MatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  Json doc = Bf16Run("samples/configs/run/tp2-dp2-zero1.json --steps 3", 0);
  EXPECT_TRUE(doc["ok"].get<bool>());
  ExpectBf16Rounding(doc);
  auto text = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --steps 1 --dtype bf16");
  EXPECT_EQ(text.r.exit_code, 0) << text.r.output;
  EXPECT_TRUE(Has(text.r.output, "dtype: bf16 (sharded and reference; communication ")) << text.r.output;
  EXPECT_TRUE(Has(text.r.output, "tolerance: |diff| <= 0.001 + 0.125 * max|reference| (bf16)")) << text.r.output;
}

TEST(RunCliTest, Bf16FoldedTp2Ep4MatchesTheUnshardedModel) {
  SKIP_WITHOUT_TORCH();
  Json doc = Bf16Run("samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json --steps 2", 0);
  EXPECT_TRUE(doc["ok"].get<bool>());
  ExpectBf16Rounding(doc);
}

TEST(RunCliTest, Bf16NoCopyAllreduceStillFailsNamingTheFamilies) {
  SKIP_WITHOUT_TORCH();
  Json doc = Bf16Run("samples/configs/run/tp2-dp2-zero1.json --steps 1 --inject no-copy-allreduce", 1);
  EXPECT_FALSE(doc["ok"].get<bool>());
  auto first = doc["first_failure"]["families"].get<std::vector<std::string>>();
  for (const char* f : {"attention", "dense_mlp", "embedding", "norm"}) {
    EXPECT_NE(std::find(first.begin(), first.end(), f), first.end()) << f << "\n" << doc.dump();
  }
  // Clearly, not marginally: measured 0.43 to 0.94 relative, against a tolerance of 0.125.
  for (const auto& f : doc["step_reports"][0]["families"]) {
    if (f["family"] != "lm_head") {
      EXPECT_GT(f["grad_max_rel"].get<double>(), 2 * 0.125) << f;
    }
  }
}

TEST(RunCliTest, Bf16SkipTpCancelStillFailsInTheRoutedExperts) {
  SKIP_WITHOUT_TORCH();
  Json doc = Bf16Run("samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json --steps 1 "
                     "--inject skip-tp-cancel", 1);
  ASSERT_TRUE(doc["first_failure"].is_object()) << doc.dump();
  EXPECT_EQ(doc["first_failure"]["families"], Json::array({"routed_experts"})) << doc.dump();
  for (const auto& f : doc["step_reports"][0]["families"]) {
    if (f["family"] == "routed_experts") {
      EXPECT_NEAR(f["grad_max_rel"].get<double>(), 1.0, 0.05) << f;
    }
  }
}

TEST(RunCliTest, WrongEpGroupIsRefusedNamingTheExperts) {
  SKIP_WITHOUT_TORCH();
  auto out = ManualLaunch(4, "samples/configs/run/folding-tp2-ep4.json --model samples/models/tiny-moe.json "
                             "--inject wrong-ep-group --timeout 20");
  // Lane-major order on 4 ranks with tp 2 is 0,2,1,3: one EP group [0,2,1,3] against the spec's [0,1,2,3].
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out[r].exit_code, 2) << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "routed_experts: the EP group [0,2,1,3] (the non-folded lane-major layout, "
                                   "injected) does not match the folding spec's EP group [0,1,2,3]"))
        << out[r].output;
  }
}

TEST(RunCliTest, FoldingFaultsNeedAFoldedPlan) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --inject skip-tp-cancel");
  // Each worker exits 2; torchrun itself reports any failed worker with exit code 1.
  EXPECT_EQ(t.r.exit_code, 1) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "needs a config with expert_parallel enabled")) << t.r.output;
}

TEST(RunCliTest, BenchMeasuresEveryCollectiveOnEveryGroupAndWritesACluster) {
  SKIP_WITHOUT_TORCH();
  char tmpl[] = "/tmp/dsp-bench-test-XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  const std::string cluster = (dir / "measured.json").string();
  auto t = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --bench --format json --cluster "
                       "samples/clusters/h200.json --cluster-out " + cluster, false);
  EXPECT_EQ(t.r.exit_code, 0) << t.r.output;
  Json doc = Json::parse(t.r.output, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << t.r.output;
  EXPECT_EQ(testing::SchemaErrors(schemas::k_bench_report_schema_json, doc), "");
  // 2 group kinds (tp, dp) x 5 collectives x 3 sizes.
  EXPECT_EQ(doc["results"].size(), 30u);
  for (const auto& row : doc["results"]) {
    EXPECT_GT(row["seconds"].get<double>(), 0.0) << row;
    const double factor = row["collective"] == "all_reduce" || row["collective"] == "broadcast" ? 1.0 : 0.5;
    EXPECT_NEAR(row["busbw_bytes_per_second"].get<double>(), row["algbw_bytes_per_second"].get<double>() * factor,
                1e-6 * row["algbw_bytes_per_second"].get<double>()) << "nccl-tests factor for 2 ranks: " << row;
  }
  // simulate accepts the cluster file it wrote.
  auto sim = RunCli("simulate samples/configs/run/tp2-dp2-zero1.json --model samples/models/tiny-llama.json "
                    "--world-size 4 --cluster " + cluster);
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  EXPECT_TRUE(Has(sim.output, "intra-node link measured by ds-plan run --bench")) << sim.output;
  fs::remove_all(dir);
}

TEST(RunCliTest, NcclRunsOnAGpuOrStopsCleanlyWithout) {
  SKIP_WITHOUT_TORCH();
  auto out = ManualLaunch(1, "samples/configs/run/dp1.json --backend nccl --steps 1 --timeout 20");
  if (out[0].exit_code == 0) {
    EXPECT_TRUE(Has(out[0].output, "parity: ok")) << out[0].output;
  } else {
    EXPECT_EQ(out[0].exit_code, 2) << out[0].output;
    EXPECT_TRUE(Has(out[0].output, "--backend nccl needs a CUDA GPU") || Has(out[0].output, "built without CUDA/NCCL"))
        << out[0].output;
  }
}

TEST(RunCliTest, AKilledRankEndsTheTorchrunRunWithinTheTimeout) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(4, "samples/configs/run/tp2-dp2-zero1.json --steps 3 --timeout 30", true,
                    "DSP_RUN_TEST_KILL_RANK=2");
  EXPECT_NE(t.r.exit_code, 0) << t.r.output;
  // torchrun's agent notices the SIGKILL, stops the other workers and names the rank.
  EXPECT_TRUE(Has(t.r.output, "local_rank: 2")) << t.r.output;
  EXPECT_TRUE(Has(t.r.output, "exitcode: -9")) << t.r.output;
  EXPECT_LT(t.seconds, 25.0) << "well before --timeout 30";
}

TEST(RunCliTest, WithoutTorchrunTheSurvivorsNameTheKilledRank) {
  SKIP_WITHOUT_TORCH();
  const auto t0 = std::chrono::steady_clock::now();
  auto out = ManualLaunch(4, "samples/configs/run/tp2-dp2-zero1.json --timeout 30",
                          [](int) { return std::string("DSP_RUN_TEST_KILL_RANK=2"); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A dead peer is found from the broken connection and the heartbeats, not by waiting out --timeout.
  EXPECT_LT(seconds, 25.0);
  EXPECT_EQ(out[2].exit_code, 128 + 9) << out[2].output;
  // Ranks 0 and 3 share a group with rank 2 (dp [0,2], tp [2,3]) and see it vanish; rank 1 only
  // sees rank 3 give up, and passes on what rank 3 found.
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(out[r].exit_code, 2) << "rank " << r << ": " << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "rank 2 is not responding")) << "rank " << r << ": " << out[r].output;
  }
}

// A frozen rank (SIGSTOP, Ctrl-Z) is not a dead one: on the same host the survivors read /proc and
// say it is stopped (issue 16: it used to be reported as died). coreutils timeout ends it after.
TEST(RunCliTest, AStoppedRankIsReportedAsStoppedNotDead) {
  SKIP_WITHOUT_TORCH();
  auto out = ManualLaunch(4, "samples/configs/run/tp2-dp2-zero1.json --timeout 8", [](int r) {
    return r == 2 ? std::string("DSP_RUN_TEST_STOP_RANK=2 timeout -s KILL 20") : std::string();
  });
  EXPECT_EQ(out[2].exit_code, 128 + 9) << out[2].output;
  for (int r : {0, 3}) {
    EXPECT_EQ(out[r].exit_code, 2) << "rank " << r << ": " << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "rank 2 is stopped (pid ")) << "rank " << r << ": " << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "not dead")) << "rank " << r << ": " << out[r].output;
  }
}

TEST(RunCliTest, ARankThatNeverArrivesIsNamedWithinTheTimeout) {
  SKIP_WITHOUT_TORCH();
  const auto t0 = std::chrono::steady_clock::now();
  // 8 s: long enough for three processes to load libtorch and join on a busy 2-core machine.
  auto out = ManualLaunch(4, "samples/configs/run/tp2-dp2-zero1.json --timeout 8", nullptr, nullptr, {0, 1, 2});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 25.0) << "timeout + rank 0 keeping the store up 3 s + start-up";
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(out[r].exit_code, 2) << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "rank 3 never arrived within 8.00 s")) << out[r].output;
  }
}

TEST(RunCliTest, ARankWithADifferentPlanIsNamedAtStartUp) {
  SKIP_WITHOUT_TORCH();
  auto out = ManualLaunch(4, "samples/configs/run/tp2-dp2-zero1.json --timeout 20", nullptr,
                          [](int r) { return r == 3 ? std::string("--seed 2") : std::string(); });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out[r].exit_code, 2) << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "same config, model and flags")) << out[r].output;
  }
  EXPECT_TRUE(Has(out[0].output, "rank 3 has plan")) << out[0].output;
  // ... and says in what: the one flag that differs, both values (issue 16).
  EXPECT_TRUE(Has(out[0].output, "which differs in seed=2 (here seed=1): every rank")) << out[0].output;
  EXPECT_TRUE(Has(out[3].output, "which differs in seed=1 (here seed=2)")) << out[3].output;
  EXPECT_FALSE(Has(out[0].output, "rank 1 has plan")) << out[0].output;
}

// Launched by hand, not through torchrun: the check runs before any rank connects (MASTER_PORT
// names a port nobody listens on), so neither a port race nor torchrun ending the slower worker
// once the faster one has exited can change what each rank prints. Under torchrun this test
// failed about once in four full suite runs for those reasons.
TEST(RunCliTest, AConfigDeepSpeedWouldRejectIsNotRun) {
  SKIP_WITHOUT_TORCH();
  // train_batch_size 8 = 2 x 1 x 4 holds for 4 ranks, not for 2.
  auto out = ManualLaunch(2, "samples/configs/run/tp2-dp2-zero1.json --timeout 5");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].exit_code, 1) << "rank " << r << ": " << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "DeepSpeed would reject this config for WORLD_SIZE=2")) << out[r].output;
  }
  // The reporter adds the diagnostics (the rule that fails); the other rank says only why it stops.
  EXPECT_TRUE(Has(out[0].output, "train_batch_size")) << out[0].output;
  EXPECT_FALSE(Has(out[1].output, "train_batch_size")) << out[1].output;
}

// run follows the one output policy (issue 16): --report never replaces a file without --force,
// and every rank refuses before any work, so no rank is left waiting for rank 0.
TEST(RunCliTest, ReportIsNotReplacedWithoutForce) {
  SKIP_WITHOUT_TORCH();
  char tmpl[] = "/tmp/dsp-run-report-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const std::string report = (dir / "report.json").string();
  { std::ofstream(report) << "mine\n"; }
  auto out = ManualLaunch(2, "samples/configs/run/dp2-zero2.json --steps 1 --timeout 5 --report " + testing::ShellQuote(report));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].exit_code, 2) << out[r].output;
    EXPECT_TRUE(Has(out[r].output, "--report " + report + ": exists: pass --force to replace it")) << out[r].output;
  }
  std::ifstream in(report);
  std::stringstream kept;
  kept << in.rdbuf();
  EXPECT_EQ(kept.str(), "mine\n");
  fs::remove_all(dir);
}

// --report - gives standard output to the JSON report; the text report moves to stderr.
TEST(RunCliTest, ReportToStandardOutputIsTheJsonAlone) {
  SKIP_WITHOUT_TORCH();
  auto t = Torchrun(2, "samples/configs/run/dp2-zero2.json --steps 1 --report -", false);
  ASSERT_EQ(t.r.exit_code, 0) << t.r.output;
  Json doc = ParseReport(t.r.output);
  EXPECT_TRUE(doc.contains("ok")) << t.r.output;
}

}  // namespace
}  // namespace dsp
