// SPDX-License-Identifier: Apache-2.0
// --attention flash (the default) resolves to the kernel each framework runs on each GPU, as the
// framework's code picks it (sources in sim/frameworks/attention_kernel.h), and the two fused
// kernels run at their own rates.
#include "sim/frameworks/attention_kernel.h"

#include <gtest/gtest.h>

#include "sim/cost/kernel_time.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {
namespace {

constexpr int kA100 = 80, kH100 = 90, kB200 = 100;

AttentionKernel Resolve(const FrameworkProfile& f, int cc, std::string_view impl = "") {
  return ResolveAttentionKernel(AttentionKernel::kFramework, f, cc, impl);
}

TEST(AttentionKernelTest, ParsesAndNamesTheFlagValues) {
  for (const char* name : {"flash", "cudnn", "flash2", "materialized"}) {
    auto k = ParseAttentionKernel(name);
    ASSERT_TRUE(k.has_value()) << name;
    EXPECT_EQ(AttentionKernelName(*k), name);
  }
  EXPECT_FALSE(ParseAttentionKernel("sdpa").has_value());
  EXPECT_FALSE(ParseAttentionKernel("FLASH").has_value());
}

// TransformerEngine's get_attention_backend prefers FusedAttention (cuDNN) on sm90 and later.
TEST(AttentionKernelTest, MegatronCoreRunsCudnnAttention) {
  EXPECT_EQ(Resolve(MegatronLmProfile(), kH100), AttentionKernel::kCudnn);
  EXPECT_EQ(Resolve(MegatronLmProfile(), kB200), AttentionKernel::kCudnn);
}

// torchtitan/models/attention.py ScaledDotProductAttention: FLASH first on sm90, cuDNN on sm100.
TEST(AttentionKernelTest, TorchtitanRunsFlashAttention2OnHopperAndCudnnOnBlackwell) {
  EXPECT_EQ(Resolve(Fsdp2Profile(), kH100), AttentionKernel::kFlash2);
  EXPECT_EQ(Resolve(Fsdp2Profile(), kB200), AttentionKernel::kCudnn);
}

// transformers' attn_implementation: flash_attention_2/3 name their kernels; sdpa (the default)
// is PyTorch's FLASH backend on sm90 (sdp_utils.cpp priority_order, torch 2.5.1-2.8); eager
// materializes the scores.
TEST(AttentionKernelTest, DeepSpeedFollowsTheModelsAttentionImplementation) {
  const FrameworkProfile& ds = DeepSpeedProfile();
  EXPECT_EQ(Resolve(ds, kH100), AttentionKernel::kFlash2);
  EXPECT_EQ(Resolve(ds, kH100, "sdpa"), AttentionKernel::kFlash2);
  EXPECT_EQ(Resolve(ds, kH100, "flash_attention_2"), AttentionKernel::kFlash2);
  EXPECT_EQ(Resolve(ds, kH100, "flash_attention_3"), AttentionKernel::kCudnn);
  EXPECT_EQ(Resolve(ds, kH100, "eager"), AttentionKernel::kMaterialized);
  EXPECT_EQ(Resolve(ds, kB200, "sdpa"), AttentionKernel::kCudnn);
  EXPECT_EQ(Resolve(ds, kA100), AttentionKernel::kFlash2);
  // Megatron-DeepSpeed's FlashSelfAttention is the flash_attn package.
  EXPECT_EQ(Resolve(MegatronDeepSpeedProfile(), kH100), AttentionKernel::kFlash2);
}

TEST(AttentionKernelTest, AnExplicitChoiceOrAnUnknownGpuIsKept) {
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kCudnn, DeepSpeedProfile(), kH100, "flash_attention_2"),
            AttentionKernel::kCudnn);
  EXPECT_EQ(ResolveAttentionKernel(AttentionKernel::kMaterialized, MegatronLmProfile(), kH100, ""),
            AttentionKernel::kMaterialized);
  // A cluster file without compute_capability: the cluster's fused rate, as before it existed,
  // unless transformers is told which implementation to run.
  EXPECT_EQ(Resolve(DeepSpeedProfile(), 0), AttentionKernel::kCudnn);
  EXPECT_EQ(Resolve(DeepSpeedProfile(), 0, "eager"), AttentionKernel::kMaterialized);
  EXPECT_EQ(Resolve(DeepSpeedProfile(), 0, "flash_attention_2"), AttentionKernel::kFlash2);
}

TEST(AttentionKernelTest, EachKernelRunsAtItsOwnRate) {
  Cluster c;
  c.gpu.peak_bf16_flops_per_second = 989e12;
  c.gpu.hbm_bytes_per_second = 3.35e12;
  c.efficiency.matmul = 0.8;
  c.efficiency.attention = 0.52;
  c.efficiency.attention_flash2 = 0.32;
  EXPECT_DOUBLE_EQ(KernelRatesOf(c, AttentionKernel::kCudnn).attention_flops_per_second, 989e12 * 0.52);
  EXPECT_DOUBLE_EQ(KernelRatesOf(c, AttentionKernel::kFlash2).attention_flops_per_second, 989e12 * 0.32);
  // Unresolved (a SimInput built by hand) is priced as the fused kernel.
  EXPECT_DOUBLE_EQ(KernelRatesOf(c, AttentionKernel::kFramework).attention_flops_per_second, 989e12 * 0.52);
  // No attention_flash2 (before sm90 FlashAttention-2 is the fused kernel): the attention rate.
  c.efficiency.attention_flash2 = 0;
  EXPECT_DOUBLE_EQ(KernelRatesOf(c, AttentionKernel::kFlash2).attention_flops_per_second, 989e12 * 0.52);
  c.efficiency.attention = 0;
  EXPECT_DOUBLE_EQ(KernelRatesOf(c, AttentionKernel::kFlash2).attention_flops_per_second, 989e12 * 0.8);
}

}  // namespace
}  // namespace dsp::sim
