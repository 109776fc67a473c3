// SPDX-License-Identifier: Apache-2.0
// The fused attention rate by shape: FlashAttention-3 (arXiv 2407.08608) Fig. 5's causal forward
// TFLOP/s on an H100 SXM5 relative to head dim 128 at 4K tokens, and the SMs a call fills.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost/attention_shape.h"
#include "sim/cost/flops.h"
#include "sim/cost/kernel_time.h"
#include "sim/cost/step_time.h"
#include "tests/sim/cost/time_test_util.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::sim {
namespace {

constexpr int kSms = 132;
// The blocks of Fig. 5's runs (16K tokens a batch, 16 heads of 128): the reference's fill.
constexpr double kFull = 16384.0 / 128 * 16;

TEST(AttentionShapeTest, TheReferenceShapeRunsAtThePresetRate) {
  for (AttentionKernel k : {AttentionKernel::kFlash2, AttentionKernel::kCudnn}) {
    EXPECT_DOUBLE_EQ(AttentionShapeFactor(k, true, {128, 4096, kFull}, kSms), 1.0);
  }
  // Nothing known about the shape: no adjustment.
  EXPECT_DOUBLE_EQ(AttentionShapeFactor(AttentionKernel::kCudnn, true, {}, kSms), 1.0);
}

TEST(AttentionShapeTest, FollowsTheFigureByHeadDimAndLength) {
  const auto fa2 = [](double d, double len) {
    return AttentionShapeFactor(AttentionKernel::kFlash2, true, {d, len, kFull}, kSms);
  };
  const auto cudnn = [](double d, double len) {
    return AttentionShapeFactor(AttentionKernel::kCudnn, true, {d, len, kFull}, kSms);
  };
  // Table points: FA2 head dim 64 at 4K 284 TFLOP/s against 319 at 128; cuDNN at 16K 539 against
  // 518, at 2K 484, at 512 315; head dim 256 at 4K 483.
  EXPECT_NEAR(fa2(64, 4096), 284.0 / 319, 1e-12);
  EXPECT_NEAR(cudnn(128, 16384), 539.0 / 518, 1e-12);
  EXPECT_NEAR(cudnn(128, 2048), 484.0 / 518, 1e-12);
  EXPECT_NEAR(cudnn(128, 512), 315.0 / 518, 1e-12);
  EXPECT_NEAR(cudnn(256, 4096), 483.0 / 518, 1e-12);
  // Between points: head dim 96 halfway between 64 and 128; 3K between 2K and 4K in log2.
  EXPECT_NEAR(cudnn(96, 4096), (363.0 + 518) / 2 / 518, 1e-12);
  const double x = std::log2(3.0 / 2.0);
  EXPECT_NEAR(fa2(128, 3072), (298 * (1 - x) + 319 * x) / 319, 1e-12);
  // Held at the ends: 15M tokens run as 16K, a 128-token window as 512.
  EXPECT_DOUBLE_EQ(fa2(128, 15e6), fa2(128, 16384));
  EXPECT_DOUBLE_EQ(fa2(128, 128), fa2(128, 512));
  EXPECT_DOUBLE_EQ(fa2(512, 4096), fa2(256, 4096));
}

TEST(AttentionShapeTest, OnlyHopperFollowsTheFigureEveryGpuCountsItsIdleSms) {
  // An A100: no table for it, so the length and head dim change nothing (the fill is the table's).
  EXPECT_DOUBLE_EQ(AttentionShapeFactor(AttentionKernel::kFlash2, false, {64, 512, kFull}, 108), 1.0);
  // One sequence of 512 tokens over 24 heads: 96 blocks leave 36 of 132 SMs idle.
  const double fill_96 = 96.0 / 132, fill_ref = kFull / (std::ceil(kFull / kSms) * kSms);
  EXPECT_NEAR(AttentionShapeFactor(AttentionKernel::kCudnn, false, {128, 4096, 96}, kSms), fill_96 / fill_ref, 1e-12);
  EXPECT_NEAR(AttentionShapeFactor(AttentionKernel::kCudnn, true, {128, 512, 96}, kSms),
              315.0 / 518 * fill_96 / fill_ref, 1e-12);
}

TEST(AttentionShapeTest, TheKernelTimeUsesIt) {
  KernelRates rates;
  rates.attention_flops_per_second = 500e12;
  rates.hbm_bytes_per_second = 4e12;
  rates.sm_count = kSms;
  rates.hopper = true;
  rates.attention_kernel = AttentionKernel::kFlash2;
  OperatorCost op{"attention", 1e12, 1e6};
  op.kind = KernelKind::kAttention;
  const double reference = KernelTimeOf(op, rates, false).seconds;
  op.attention_shape = {64, 4096, kFull};
  EXPECT_NEAR(KernelTimeOf(op, rates, false).seconds / reference, 319.0 / 284, 1e-9);
  EXPECT_NEAR(KernelTimeOf(op, rates, true).seconds / KernelTimeOf(op, rates, false).seconds, 2.5, 1e-9);
}

TEST(AttentionShapeTest, TheAttentionOperatorCarriesItsShape) {
  const ModelSpec m = testing::ParsePresetOrDie("llama-3-8b.json");  // 32 heads of 128
  ShardShape shard;
  shard.micro_batch = 2;
  shard.seq_len = 8192;
  shard.tp = 2;
  const auto find = [&](const ShardShape& s) {
    for (const OperatorCost& op : LayerForwardOperators(m, 0, s)) {
      if (op.kind == KernelKind::kAttention) return op.attention_shape;
    }
    ADD_FAILURE() << "no fused attention operator";
    return AttentionShape{};
  };
  AttentionShape a = find(shard);
  EXPECT_DOUBLE_EQ(a.head_dim, 128);
  EXPECT_DOUBLE_EQ(a.key_length, 8192);
  EXPECT_DOUBLE_EQ(a.blocks, 2 * 16 * 64);  // 2 sequences x 16 heads on the rank x 64 blocks
  // A KV ring over 4 ranks: each call walks a quarter of the keys.
  shard.sp = 4;
  shard.attention_key_split = 4;
  a = find(shard);
  EXPECT_DOUBLE_EQ(a.key_length, 2048);
  EXPECT_DOUBLE_EQ(a.blocks, 2 * 4 * 64);
}

// The shape a call walks: a sliding window's query walks the whole window (the causal table's
// length 2w), a chunked layer is causal inside its chunk, MLA's heads are (192 + 128) / 2 wide.
TEST(AttentionShapeTest, WindowsChunksAndLatentHeads) {
  ModelSpec m = testing::ParsePresetOrDie("llama-3-8b.json");
  ShardShape shard;
  m.sliding_window = 1024;
  EXPECT_DOUBLE_EQ(FusedAttentionShape(m, AttentionKind::kSliding, shard, 1, 8192, 32).key_length, 2048);
  EXPECT_DOUBLE_EQ(FusedAttentionShape(m, AttentionKind::kFull, shard, 1, 8192, 32).key_length, 8192);
  m.attention_chunk_size = 4096;
  EXPECT_DOUBLE_EQ(FusedAttentionShape(m, AttentionKind::kChunked, shard, 1, 8192, 32).key_length, 4096);
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");
  EXPECT_DOUBLE_EQ(FusedAttentionShape(v3, AttentionKind::kFull, shard, 1, 4096, 128).head_dim, 160);
}

// Which context parallelism walks the keys chunk by chunk: Megatron's KV ring and torch's
// all-gathered K and V (torchtitan, with its ring merges), not DeepSpeed-Ulysses.
TEST(AttentionShapeTest, ChunkedContextParallelismSplitsTheKeys) {
  Json config = Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "sequence_parallel_size": 8})");
  testing::SimCase c(config, 8, 8, "llama-3-8b.json");
  c.input.workload.seq_len = 65536;
  EXPECT_EQ(ShardShapeOf(c.input).attention_key_split, 1);  // DeepSpeed-Ulysses: whole sequence
  c.input.engine.engine = Engine::kMegatronLm;
  EXPECT_EQ(ShardShapeOf(c.input).attention_key_split, 8);
  EXPECT_FALSE(ShardShapeOf(c.input).torch_ring_attention);
  c.input.engine.engine = Engine::kFsdp2;
  const ShardShape torch_cp = ShardShapeOf(c.input);
  EXPECT_EQ(torch_cp.attention_key_split, 8);
  EXPECT_TRUE(torch_cp.torch_ring_attention);
  // torch's ring adds its merges to the layer's attention core: forward 7 steps of K/V concatenated
  // (4 bytes an element) and outputs merged (32.5 on average), 12 more for the casts.
  const auto ops = LayerForwardOperators(c.model, 0, torch_cp);
  double merge = 0, backward = 0;
  for (const OperatorCost& op : ops) {
    if (op.name == "cp_ring_merge") merge = op.bytes, backward = op.backward_bytes;
  }
  const double nq = 65536.0 * 4 * 128, nkv = 65536.0 * 1 * 256;  // 32 / 8 heads, 8 / 8 KV heads
  EXPECT_DOUBLE_EQ(merge, 7 * (4 * nkv + 32.5 * nq) + 12 * nq);
  EXPECT_DOUBLE_EQ(backward, 8 * (19.5 * nkv + 11.5 * nq) + 4 * 7 * nkv + 10 * (nq + nkv));
}

}  // namespace
}  // namespace dsp::sim
