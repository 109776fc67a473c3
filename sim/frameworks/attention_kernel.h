// SPDX-License-Identifier: Apache-2.0
// Which attention kernel a run executes. The same causal attention runs at about 0.6 of the speed
// under FlashAttention-2 as under cuDNN's or FlashAttention-3's Hopper kernels (FlashAttention-3,
// Shah et al. 2024, arXiv 2407.08608, Fig. 5: head dim 128, causal, 16k: FA2 335, cuDNN 539, FA3 616
// TFLOP/s on an H100 SXM5), and which one a run gets depends on the framework, the attention
// implementation it asks for and the GPU, not on the model: so it is resolved once per plan here.
#pragma once

#include <optional>
#include <string_view>

namespace dsp::sim {

struct FrameworkProfile;

enum class AttentionKernel {
  kFramework,     // --attention flash (the default): what the framework runs, resolved below
  kCudnn,         // cuDNN's fused flash attention or FlashAttention-3 (the cluster's "attention")
  kFlash2,        // FlashAttention-2: the flash_attn package, PyTorch SDPA's FLASH backend
  kMaterialized,  // scores written to HBM (eager attention, the 2021-22 runs)
};

// --attention's values: flash (the framework's own), cudnn, flash2, materialized.
std::optional<AttentionKernel> ParseAttentionKernel(std::string_view name);
std::string_view AttentionKernelName(AttentionKernel kernel);

// The kernel `choice` means for this framework on a GPU of `compute_capability` (major*10+minor, 0 =
// unknown) when the model runs transformers' `attn_implementation` ("" = transformers' default, sdpa):
//  - Megatron-Core: TransformerEngine's DotProductAttention prefers FusedAttention (cuDNN) over
//    flash-attn on sm90 and later (transformer_engine/pytorch/attention/dot_product_attention/
//    utils.py get_attention_backend, TE 2.4).
//  - transformers (DeepSpeed's and Accelerate's models): flash_attention_2 runs FlashAttention-2,
//    flash_attention_3 FlashAttention-3, eager materializes the scores; sdpa runs PyTorch's
//    scaled_dot_product_attention, whose FLASH backend (FlashAttention-2) comes first on sm90 from
//    torch 2.5.1 to 2.8 (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp priority_order;
//    pytorch/pytorch#138522 made cuDNN opt-in); torch 2.9 and later put cuDNN first when its cuDNN
//    is recent enough (pytorch/pytorch#162073, #171627): --attention cudnn for those.
//  - Megatron-DeepSpeed: the flash_attn package's FlashAttention-2 (megatron/model/transformer.py
//    FlashSelfAttention, --use-flash-attn-v2).
//  - torchtitan: sdpa_kernel([FLASH, EFFICIENT, MATH]) on sm90, cuDNN first only on sm100
//    (torchtitan/models/attention.py ScaledDotProductAttention).
// On sm100 and later the SDPA paths take cuDNN; before sm90 FlashAttention-2 is the fused kernel
// (the cluster's attention_flash2 is then absent and both rates are the same).
AttentionKernel ResolveAttentionKernel(AttentionKernel choice, const FrameworkProfile& framework,
                                       int compute_capability, std::string_view attn_implementation);

}  // namespace dsp::sim
