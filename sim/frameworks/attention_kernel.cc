// SPDX-License-Identifier: Apache-2.0
#include "sim/frameworks/attention_kernel.h"

#include "sim/frameworks/framework.h"

namespace dsp::sim {

std::optional<AttentionKernel> ParseAttentionKernel(std::string_view name) {
  if (name == "flash") return AttentionKernel::kFramework;
  if (name == "cudnn") return AttentionKernel::kCudnn;
  if (name == "flash2") return AttentionKernel::kFlash2;
  if (name == "materialized") return AttentionKernel::kMaterialized;
  return std::nullopt;
}

std::string_view AttentionKernelName(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFramework: return "flash";
    case AttentionKernel::kCudnn: return "cudnn";
    case AttentionKernel::kFlash2: return "flash2";
    case AttentionKernel::kMaterialized: return "materialized";
  }
  return "flash";
}

AttentionKernel ResolveAttentionKernel(AttentionKernel choice, const FrameworkProfile& framework,
                                       int compute_capability, std::string_view attn_implementation) {
  if (choice != AttentionKernel::kFramework) return choice;
  // The implementation transformers is told to run names its kernel whatever the GPU.
  if (framework.attention == FrameworkAttention::kTransformers) {
    if (attn_implementation == "flash_attention_2") return AttentionKernel::kFlash2;
    if (attn_implementation == "flash_attention_3") return AttentionKernel::kCudnn;
    if (attn_implementation == "eager") return AttentionKernel::kMaterialized;
  }
  // Unknown GPU (a cluster file without compute_capability): the cluster's fused rate, as before.
  if (compute_capability == 0) return AttentionKernel::kCudnn;
  switch (framework.attention) {
    case FrameworkAttention::kTransformerEngine:
      return AttentionKernel::kCudnn;
    case FrameworkAttention::kFlashAttn2:
      return AttentionKernel::kFlash2;
    case FrameworkAttention::kTransformers:  // sdpa, the default: PyTorch's order below
      [[fallthrough]];
    case FrameworkAttention::kTorchSdpa:
      return compute_capability >= 100 ? AttentionKernel::kCudnn : AttentionKernel::kFlash2;
  }
  return AttentionKernel::kCudnn;
}

}  // namespace dsp::sim
