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
    const std::string path = ::testing::TempDir() + "kernels-zero3.json";
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})", f);
    std::fclose(f);
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
  // The H100 preset's FlashAttention-2 rate (0.32) is below cuDNN's (0.52): at 32K tokens, where
  // attention is a large share, the step is longer.
  const Json cudnn = Simulate(" --attention cudnn");
  EXPECT_EQ(cudnn["engine"]["attention"], "cudnn");
  EXPECT_GT(Step(ds), 1.1 * Step(cudnn));
  auto text = RunCli("simulate " + Llama31Run());
  EXPECT_NE(text.output.find("engine   deepspeed, attention flash2"), std::string::npos) << text.output;
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
  auto bad = RunCli("simulate " + Llama31Run() + " --attention flash3");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
}

}  // namespace
}  // namespace dsp
