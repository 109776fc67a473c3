// SPDX-License-Identifier: Apache-2.0
// gpt_oss and llama4 (text model): MoE decoders whose checkpoints hold the experts as fused
// [E, ...] tensors, with alternating attention kinds.
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp::model_internal {

// GptOssConfig: biased q/k/v/o, a learned sink logit per head, a biased router and experts with
// biases (gate_up_proj [E, h, 2w] interleaves gate and up), sliding and full layers alternating
// (layer_types; the class default makes even layers sliding).
Result<ModelSpec> ParseGptOss(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kGptOss;
  bool head_dim_given = false;
  Status core = ReadDecoderCore(s, r, 64, 131072, false, &head_dim_given);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", true));
  s.o_proj_bias = s.attention_bias;
  s.attention_sinks = true;
  DSP_ASSIGN_OR_RETURN(s.num_experts, ExpertCount(r));
  DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  s.moe_intermediate_size = s.intermediate_size;
  s.router_bias = s.expert_bias = s.fused_experts = true;
  s.norm_topk_prob = true;  // softmax over the top-k logits
  DSP_ASSIGN_OR_RETURN(s.sliding_window, r.IntOr("sliding_window", 128, 1, int64_t{1} << 40));
  DSP_ASSIGN_OR_RETURN(s.layer_attention, LayerTypes(r, s.num_hidden_layers));
  if (s.layer_attention.empty()) {
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      s.layer_attention.push_back((i + 1) % 2 ? AttentionKind::kSliding : AttentionKind::kFull);
    }
  }
  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

// Llama4TextConfig: MoE layers every interleave_moe_layer_step-th layer (moe_layers overrides),
// each a top-k router over fused experts plus one shared expert of intermediate_size; dense
// layers use intermediate_size_mlp. Rotary layers attend in attention_chunk_size chunks, every
// no_rope_layer_interval-th layer (no_rope_layers[i] == 0) is NoPE with full attention. q/k are
// L2-normalised without weights (use_qk_norm).
Result<ModelSpec> ParseLlama4(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kLlama4;
  bool head_dim_given = false;
  Status core = ReadDecoderCore(s, r, 128, 4096 * 32, false, &head_dim_given);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", false));
  s.o_proj_bias = s.attention_bias;
  DSP_ASSIGN_OR_RETURN(s.num_experts, ExpertCount(r));
  DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.moe_intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  s.shared_expert_intermediate_size = s.moe_intermediate_size;
  s.fused_experts = true;
  DSP_ASSIGN_OR_RETURN(s.decoder_sparse_step, r.IntOr("interleave_moe_layer_step", 1, 1, kMaxCount));
  if (const Json* moe = r.Find("moe_layers"); moe != nullptr) {
    // An explicit list: every other layer is dense.
    if (!moe->is_array()) return r.Fail("moe_layers", "must be a list of layer indices");
    std::vector<bool> sparse(static_cast<size_t>(s.num_hidden_layers), false);
    for (const Json& i : *moe) {
      if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= s.num_hidden_layers) {
        return r.Fail("moe_layers", "holds " + Shown(i) + ", not a layer index");
      }
      sparse[static_cast<size_t>(i.get<int64_t>())] = true;
    }
    s.decoder_sparse_step = 1;
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      if (!sparse[static_cast<size_t>(i)]) s.mlp_only_layers.push_back(i);
    }
  }
  const bool has_dense = s.NumMoeLayers() < s.num_hidden_layers;
  DSP_ASSIGN_OR_RETURN(s.intermediate_size,
                       has_dense ? r.RequiredInt("intermediate_size_mlp", 1, kMaxDim)
                                 : r.IntOr("intermediate_size_mlp", 16384, 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.attention_chunk_size, r.IntOr("attention_chunk_size", 0, 1, int64_t{1} << 40));
  DSP_ASSIGN_OR_RETURN(s.layer_attention, LayerTypes(r, s.num_hidden_layers));
  if (s.layer_attention.empty() && s.attention_chunk_size > 0) {
    int64_t interval = 4;
    DSP_ASSIGN_OR_RETURN(interval, r.IntOr("no_rope_layer_interval", 4, 1, kMaxCount));
    const Json* no_rope = r.Find("no_rope_layers");
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      bool rope = (i + 1) % interval != 0;
      if (no_rope != nullptr && no_rope->is_array() &&
          static_cast<int64_t>(no_rope->size()) == s.num_hidden_layers) {
        const Json& v = (*no_rope)[static_cast<size_t>(i)];
        rope = v.is_number() ? v.get<double>() != 0 : rope;
      }
      s.layer_attention.push_back(rope ? AttentionKind::kChunked : AttentionKind::kFull);
    }
  }
  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace dsp::model_internal
