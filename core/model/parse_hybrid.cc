// SPDX-License-Identifier: Apache-2.0
// Decoders that mix attention kinds layer by layer: qwen3_next / qwen3_5 (Gated DeltaNet linear
// attention and gated full attention) and gemma2 / gemma3 (sliding and full attention, four norms
// per layer).
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp::model_internal {

// Qwen3NextConfig: layer_types (default: every full_attention_interval-th layer full, the rest
// linear), gated attention with q/k norms, a MoE block of routed experts plus a gated shared
// expert (dense when there are no experts: qwen3_5 dense).
Result<ModelSpec> ParseQwenNext(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kQwenNext;
  const bool qwen3_5 = s.model_type != "qwen3_next";
  s.split_linear_proj = qwen3_5;
  bool head_dim_given = false;
  Status core = ReadDecoderCore(s, r, 256, 32768, false, &head_dim_given);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.attention_output_gate, r.BoolOr("attn_output_gate", true));
  s.qk_norm = true;
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", false));
  s.o_proj_bias = s.attention_bias;
  DSP_ASSIGN_OR_RETURN(s.linear_num_key_heads, r.RequiredInt("linear_num_key_heads", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.linear_num_value_heads, r.RequiredInt("linear_num_value_heads", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.linear_key_head_dim, r.RequiredInt("linear_key_head_dim", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.linear_value_head_dim, r.RequiredInt("linear_value_head_dim", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.linear_conv_kernel_dim, r.IntOr("linear_conv_kernel_dim", 4, 1, kMaxDim));
  if (s.linear_num_value_heads % s.linear_num_key_heads != 0) {
    return r.Fail("linear_num_value_heads",
                  "(" + std::to_string(s.linear_num_value_heads) +
                      ") must be a multiple of 'linear_num_key_heads' (" +
                      std::to_string(s.linear_num_key_heads) + ")");
  }
  DSP_ASSIGN_OR_RETURN(s.layer_attention, LayerTypes(r, s.num_hidden_layers));
  if (s.layer_attention.empty()) {
    int64_t interval = 4;
    DSP_ASSIGN_OR_RETURN(interval, r.IntOr("full_attention_interval", 4, 1, kMaxCount));
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      s.layer_attention.push_back((i + 1) % interval ? AttentionKind::kLinear : AttentionKind::kFull);
    }
  }
  // The checkpoints' mtp.* layers (dropped on load: _keys_to_ignore_on_load_unexpected
  // "^mtp.*"): mtp_num_hidden_layers in qwen3_5; qwen3_next's config has no key, and its published
  // checkpoints hold one.
  DSP_ASSIGN_OR_RETURN(s.mtp_layers, r.IntOr("mtp_num_hidden_layers", 1, 0, 16));
  if (s.mtp_layers > 0) {
    s.left_out.push_back(std::to_string(s.mtp_layers) +
                         " multi-token-prediction layer(s) of the checkpoint (mtp.*; not trained "
                         "by transformers; counted apart)");
  }
  std::optional<int64_t> experts;
  // qwen3_5 (dense) has no MoE keys; qwen3_5_moe's experts are fused in the checkpoint and its
  // router always renormalises the top-k weights.
  if (s.model_type != "qwen3_5_text") DSP_ASSIGN_OR_RETURN(experts, r.Int("num_experts", 1, kMaxCount));
  if (experts) {
    s.num_experts = *experts;
    DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.moe_intermediate_size, r.RequiredInt("moe_intermediate_size", 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.shared_expert_intermediate_size,
                         r.IntOr("shared_expert_intermediate_size", 0, 0, kMaxDim));
    s.shared_expert_gate = s.shared_expert_intermediate_size > 0;
    DSP_ASSIGN_OR_RETURN(s.decoder_sparse_step, r.IntOr("decoder_sparse_step", 1, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.mlp_only_layers, r.IntList("mlp_only_layers"));
    DSP_ASSIGN_OR_RETURN(s.norm_topk_prob, r.BoolOr("norm_topk_prob", true));
    if (s.model_type == "qwen3_5_moe_text") {
      s.fused_experts = true;
      s.norm_topk_prob = true;
      s.decoder_sparse_step = 1;  // every layer is MoE (Qwen3_5MoeDecoderLayer)
      s.mlp_only_layers.clear();
    }
  }
  const bool has_dense = s.NumMoeLayers() < s.num_hidden_layers;
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, has_dense ? r.RequiredInt("intermediate_size", 1, kMaxDim)
                                                      : r.IntOr("intermediate_size", 5632, 1, kMaxDim));
  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

// Gemma2Config / Gemma3TextConfig: GeGLU MLP, RMSNorm before and after both attention and MLP,
// tied embeddings, head_dim 256 by default; gemma2 alternates sliding and full layers, gemma3
// makes every sliding_window_pattern-th layer full and adds q/k norms.
Result<ModelSpec> ParseGemma(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kGemma;
  const bool gemma3 = s.model_type == "gemma3_text";
  bool head_dim_given = false;
  // Gemma3ForConditionalGeneration's text_config leaves vocab_size to Gemma3TextConfig's default.
  Status core = ReadDecoderCore(s, r, 256, gemma3 ? 131072 : 8192, true, &head_dim_given,
                                gemma3 ? 262208 : 0);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", false));
  s.o_proj_bias = s.attention_bias;
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  s.norms_per_layer = 4;
  s.qk_norm = gemma3;
  DSP_ASSIGN_OR_RETURN(s.sliding_window, r.IntOr("sliding_window", 4096, 1, int64_t{1} << 40));
  DSP_ASSIGN_OR_RETURN(s.layer_attention, LayerTypes(r, s.num_hidden_layers));
  if (s.layer_attention.empty()) {
    int64_t pattern = 2;
    if (gemma3) DSP_ASSIGN_OR_RETURN(pattern, r.IntOr("sliding_window_pattern", 6, 1, kMaxCount));
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      s.layer_attention.push_back((i + 1) % pattern ? AttentionKind::kSliding : AttentionKind::kFull);
    }
  }
  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace dsp::model_internal
