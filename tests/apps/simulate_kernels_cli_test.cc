// SPDX-License-Identifier: Apache-2.0
// ds-plan simulate's kernel and memory-saver flags: the attention kernel each engine runs
// (--attention), Liger's fused loss (--fused-loss), DeepSpeed's TiledMLP (--tiled-mlp) and the
// allocator's expandable segments (--expandable-segments), as the text and the JSON say them.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "core/json/document.h"
#include "tests/apps/cli_test_util.h"

namespace dsp {
namespace {

using testing::RunCli;

// Llama 3.1 8B (128K positions) under ZeRO-3 on one H100 node at 32K tokens.
std::string Llama31Run() {
  static const std::string run = [] {
    const std::string path = testing::WriteTempFile(
        "kernels-zero3.json",
        R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})");
    return path + " --model samples/runs/modern/models/llama-3.1-8b.json --cluster samples/clusters/h100-sxm.json "
                  "--world-size 8 --seq-len 32768 --recompute full";
  }();
  return run;
}

Json Simulate(const std::string& extra) {
  auto r = RunCli("simulate " + Llama31Run() + extra + " --format json", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.output;
  Json doc = Json::parse(r.output, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.output;
  return doc;
}

double Step(const Json& j) { return j["time"]["step_seconds"].get<double>(); }

TEST(SimulateKernelsCliTest, EachEngineRunsItsOwnAttentionKernel) {
  // DeepSpeed with transformers' default sdpa on an H100: PyTorch's FLASH backend.
  const Json ds = Simulate("");
  EXPECT_EQ(ds["engine"]["attention"], "flash2");
  EXPECT_EQ(Simulate(" --attn-impl flash_attention_3")["engine"]["attention"], "cudnn");
  EXPECT_EQ(Simulate(" --engine megatron-lm --set zero_optimization.stage=1")["engine"]["attention"], "cudnn");
  // The H100 preset's FlashAttention-2 rate (0.316) is below cuDNN's (0.51): at 32K tokens, where
  // attention is a large share, the step is longer.
  const Json cudnn = Simulate(" --attention cudnn");
  EXPECT_EQ(cudnn["engine"]["attention"], "cudnn");
  EXPECT_GT(Step(ds), 1.1 * Step(cudnn));
  auto text = RunCli("simulate " + Llama31Run());
  EXPECT_NE(text.output.find("engine   deepspeed, attention flash2"), std::string::npos) << text.output;
}

// A cluster file that does not name its GPU's compute capability gets no attention-by-shape table,
// and simulate says so; the presets name theirs.
TEST(SimulateKernelsCliTest, AClusterWithoutComputeCapabilitySaysAttentionRunsAtOneRate) {
  const char* note = "the cluster gives no gpu.compute_capability";
  auto preset = RunCli("simulate " + Llama31Run(), /*merge_stderr=*/true);
  ASSERT_EQ(preset.exit_code, 0) << preset.output;
  EXPECT_EQ(preset.output.find(note), std::string::npos) << preset.output;
  Json cluster = Json::parse(testing::Slurp(std::string(DSP_SOURCE_DIR) + "/samples/clusters/h100-sxm.json"));
  cluster["gpu"].erase("compute_capability");
  const std::string path = testing::WriteTempFile("h100-no-cc.json", cluster.dump());
  std::string run = Llama31Run();
  run.replace(run.find("samples/clusters/h100-sxm.json"), std::string("samples/clusters/h100-sxm.json").size(), path);
  auto r = RunCli("simulate " + run, /*merge_stderr=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(note), std::string::npos) << r.output;
}

TEST(SimulateKernelsCliTest, MemorySaversChangeWhatTheyShould) {
  const Json plain = Simulate("");
  const Json fused = Simulate(" --fused-loss");
  EXPECT_TRUE(fused["engine"]["fused_loss"].get<bool>());
  // 32K tokens of 128K-vocabulary logits at 14 bytes each are 58 GB; fused, none.
  EXPECT_LT(fused["memory"]["peak_bytes"].get<double>(), plain["memory"]["peak_bytes"].get<double>() - 40e9);
  // Without the logits in the way, the recomputed layer's MLP tensors are the peak's working set.
  const Json tiled = Simulate(" --fused-loss --tiled-mlp");
  EXPECT_TRUE(tiled["engine"]["tiled_mlp"].get<bool>());
  EXPECT_LT(tiled["memory"]["peak_bytes"].get<double>(), fused["memory"]["peak_bytes"].get<double>() - 1e9);
  EXPECT_GT(Step(tiled), Step(fused));  // the MLP's forward runs once more in backward
  const Json expandable = Simulate(" --expandable-segments");
  EXPECT_TRUE(expandable["engine"]["expandable_segments"].get<bool>());
  // Only the fragmentation allowance goes; the reserved part (CUDA context, NCCL) stays.
  EXPECT_LT(expandable["memory"]["allowance_bytes"].get<double>(), plain["memory"]["allowance_bytes"].get<double>());
  EXPECT_GT(expandable["memory"]["allowance_bytes"].get<double>(), 0);
  EXPECT_EQ(expandable["memory"]["peak_bytes"], plain["memory"]["peak_bytes"]);
}

TEST(SimulateKernelsCliTest, MegatronRefusesTheTransformersPatches) {
  for (const char* flag : {" --fused-loss", " --tiled-mlp"}) {
    auto r = RunCli("simulate " + Llama31Run() + " --engine megatron-lm --set zero_optimization.stage=1" + flag);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("use it with --engine deepspeed or fsdp2"), std::string::npos) << r.output;
  }
  // torchtitan's op-level selective AC and TiledMLP are not modelled together.
  const std::string fsdp2 = testing::WriteTempFile(
      "kernels-fsdp2.json",
      R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})");
  auto sac = RunCli("simulate " + fsdp2 + " --model samples/runs/modern/models/llama-3.1-8b.json --cluster h100-sxm "
                    "--world-size 8 --engine fsdp2 --recompute selective --tiled-mlp");
  EXPECT_EQ(sac.exit_code, 2) << sac.output;
  EXPECT_NE(sac.output.find("not modelled together"), std::string::npos) << sac.output;
  auto bad = RunCli("simulate " + Llama31Run() + " --attention flash3");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

// DeepCompile's offload_opt_states (deepspeed/compile/config.py: "keeping resident whatever the
// memory budget allows", DeepSpeed 0.19.6): Qwen3-14B at 4 x 2400 tokens on 8 H200 does not fit with its 22 GB of
// optimizer states on the GPU (DeepSpeed PR #8186: eager ZeRO-3 and DeepCompile ran out of
// memory there, the offload pass ran); at micro-batch 1 everything stays resident.
TEST(SimulateKernelsCliTest, DeepCompileOffloadsOnlyWhatTheBudgetDoesNotHold) {
  auto config = [](int micro_batch, bool offload) {
    const std::string path = testing::WriteTempFile(
        "dc-" + std::to_string(micro_batch) + (offload ? "-off" : "") + ".json",
        "{\"train_micro_batch_size_per_gpu\": " + std::to_string(micro_batch) +
            ", \"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3}, "
            "\"compile\": {\"deepcompile\": true" + (offload ? ", \"offload_opt_states\": true" : "") + "}}");
    return path + " --model samples/runs/modern/models/qwen3-14b.json --cluster samples/clusters/h200.json "
                  "--world-size 8 --seq-len 2400 --expandable-segments --format json";
  };
  auto run = [](const std::string& args) {
    auto r = RunCli("simulate " + args, /*merge_stderr=*/false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return Json::parse(r.output, nullptr, false);
  };
  const Json resident = run(config(4, false));
  EXPECT_FALSE(resident["memory"]["fits"].get<bool>());
  const Json offloaded = run(config(4, true));
  EXPECT_TRUE(offloaded["memory"]["fits"].get<bool>());
  EXPECT_GT(offloaded["memory"]["cpu_bytes"].get<double>(), 1e9);
  EXPECT_LT(offloaded["memory"]["peak_bytes"].get<double>(), resident["memory"]["peak_bytes"].get<double>());
  // The pass's own budget (compile/passes/offload_adam_states.py offload_opt_states_inc: 0.8 x the
  // device's memory, whole tensors popped sub-group by sub-group until the rest fits): at 3 x 2400
  // tokens the first sub-group's (ZeRO-3's default sub_group_size, 1e9 parameters) exp_avg and
  // exp_avg_sq go to the host, 2 x 4 bytes x 1e9, and the rest of the 1.85e9 parameters' states stay.
  const Json partial = run(config(3, true));
  EXPECT_DOUBLE_EQ(partial["memory"]["cpu_bytes"].get<double>(), 8e9);
  // Room for all of it at micro-batch 1: nothing moves, nothing changes.
  const Json small = run(config(1, true));
  EXPECT_EQ(small["memory"]["cpu_bytes"].get<double>(), 0);
  EXPECT_EQ(small["memory"]["peak_bytes"], run(config(1, false))["memory"]["peak_bytes"]);
}

}  // namespace
}  // namespace dsp
