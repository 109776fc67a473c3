// SPDX-License-Identifier: Apache-2.0
// The llama family: llama (and unknown llama-like types), mistral, qwen2, qwen3, mixtral,
// qwen2_moe, qwen3_moe, phi3, and the text models of Qwen2-VL, Qwen2.5-VL and Qwen3-VL.
// Defaults follow each transformers configuration_<type>.py.
#include <algorithm>
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp::model_internal {
namespace {

enum class Arch { kLlama, kMistral, kQwen2, kQwen3, kMixtral, kQwen2Moe, kQwen3Moe, kPhi3 };

Arch ArchOf(const ModelSpec& s) {
  const std::string& t = s.model_type;
  if (t == "mistral") return Arch::kMistral;
  // Qwen2VLTextConfig, Qwen2_5_VLTextConfig: Qwen2's decoder (q/k/v biased, o_proj not).
  if (t == "qwen2" || t == "qwen2_vl_text" || t == "qwen2_5_vl_text") return Arch::kQwen2;
  if (t == "qwen3" || t == "qwen3_vl_text") return Arch::kQwen3;
  if (t == "mixtral") return Arch::kMixtral;
  if (t == "qwen2_moe") return Arch::kQwen2Moe;
  if (t == "qwen3_moe" || t == "qwen3_vl_moe_text") return Arch::kQwen3Moe;
  if (t == "phi3") return Arch::kPhi3;
  return Arch::kLlama;  // llama, and unknown types assumed llama-like
}

}  // namespace

Result<ModelSpec> ParseLlamaFamily(ModelSpec s, const Reader& r) {
  const Arch arch = ArchOf(s);
  s.family = ModelFamily::kLlama;
  const bool moe = arch == Arch::kMixtral || arch == Arch::kQwen2Moe || arch == Arch::kQwen3Moe;
  const bool qwen_moe = arch == Arch::kQwen2Moe || arch == Arch::kQwen3Moe;
  // Qwen3VLTextConfig / Qwen3VLMoeTextConfig (transformers models/qwen3_vl, qwen3_vl_moe): Qwen3's
  // decoder; the MoE one drops norm_topk_prob (its TopKRouter always renormalises the top k) and
  // head_dim defaults to hidden / heads; both default to 128,000 positions.
  const bool qwen3_vl = s.model_type == "qwen3_vl_text" || s.model_type == "qwen3_vl_moe_text";
  const bool qwen3_vl_moe = s.model_type == "qwen3_vl_moe_text";

  DSP_ASSIGN_OR_RETURN(s.hidden_size, r.RequiredInt("hidden_size", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.num_hidden_layers, r.RequiredInt("num_hidden_layers", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.num_attention_heads, r.RequiredInt("num_attention_heads", 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.num_key_value_heads,
                       r.IntOr("num_key_value_heads", s.num_attention_heads, 1, kMaxCount));
  DSP_ASSIGN_OR_RETURN(s.vocab_size, r.RequiredInt("vocab_size", 1, kMaxDim));

  const bool head_dim_given = r.Has("head_dim") || arch == Arch::kQwen3;
  // Qwen3Config (and Qwen3VLTextConfig) declare head_dim = 128; every other class here falls back
  // to hidden / heads.
  const int64_t default_head_dim =
      arch == Arch::kQwen3 ? 128 : s.hidden_size / s.num_attention_heads;
  DSP_ASSIGN_OR_RETURN(s.head_dim,
                       r.IntOr("head_dim", std::max<int64_t>(default_head_dim, 1), 1, kMaxDim));

  // Defaults of each transformers config class; only used when the key is absent.
  int64_t default_positions = 2048;  // LlamaConfig
  if (arch == Arch::kMistral || arch == Arch::kMixtral) default_positions = 4096 * 32;
  if (arch == Arch::kQwen2 || arch == Arch::kQwen3 || qwen_moe) default_positions = 32768;
  if (arch == Arch::kPhi3) default_positions = 4096;
  if (qwen3_vl) default_positions = 128000;
  DSP_ASSIGN_OR_RETURN(s.max_position_embeddings,
                       r.IntOr("max_position_embeddings", default_positions, 1, int64_t{1} << 40));
  DSP_ASSIGN_OR_RETURN(s.tie_word_embeddings, r.BoolOr("tie_word_embeddings", false));

  switch (arch) {
    case Arch::kLlama: {
      bool bias = false;
      DSP_ASSIGN_OR_RETURN(bias, r.BoolOr("attention_bias", false));
      s.attention_bias = s.o_proj_bias = bias;
      DSP_ASSIGN_OR_RETURN(s.mlp_bias, r.BoolOr("mlp_bias", false));
      break;
    }
    case Arch::kQwen2:  // q/k/v always biased, o_proj never (hard-coded in Qwen2Attention)
      s.attention_bias = true;
      break;
    case Arch::kQwen2Moe:  // Qwen2MoeConfig.qkv_bias, default true; o_proj unbiased
      DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("qkv_bias", true));
      break;
    case Arch::kQwen3:
    case Arch::kQwen3Moe: {
      bool bias = false;
      DSP_ASSIGN_OR_RETURN(bias, r.BoolOr("attention_bias", false));
      s.attention_bias = s.o_proj_bias = bias;
      s.qk_norm = true;
      break;
    }
    case Arch::kMistral:
    case Arch::kMixtral: break;  // no bias options in these classes
    case Arch::kPhi3:
      // Phi3Attention: one qkv_proj and o_proj, no biases; Phi3MLP: gate_up_proj, down_proj.
      s.fused_qkv = s.fused_gate_up = true;
      break;
  }

  if (moe) {
    DSP_ASSIGN_OR_RETURN(s.num_experts, ExpertCount(r));
    DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
    // Mixtral always renormalises the top-k weights; the Qwen blocks make it an option.
    s.norm_topk_prob = true;
    if (qwen_moe && !qwen3_vl_moe) DSP_ASSIGN_OR_RETURN(s.norm_topk_prob, r.BoolOr("norm_topk_prob", false));
    // Qwen3VLMoeTextExperts is transformers 5's Qwen3MoeExperts: gate_up_proj [E, 2I, H], down_proj
    // [E, H, I], one tensor each (the Qwen3-VL MoE checkpoints store them fused too, gate_up_proj as
    // [E, H, 2I], transposed on load).
    s.fused_experts = qwen3_vl_moe;
  }
  if (arch == Arch::kMixtral) {
    // Mixtral experts are the full-width MLP; every layer is sparse.
    DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
    s.moe_intermediate_size = s.intermediate_size;
  } else if (qwen_moe) {
    DSP_ASSIGN_OR_RETURN(s.moe_intermediate_size,
                         r.RequiredInt("moe_intermediate_size", 1, kMaxDim));
    DSP_ASSIGN_OR_RETURN(s.decoder_sparse_step, r.IntOr("decoder_sparse_step", 1, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.mlp_only_layers, r.IntList("mlp_only_layers"));
    if (arch == Arch::kQwen2Moe) {
      DSP_ASSIGN_OR_RETURN(s.shared_expert_intermediate_size,
                           r.RequiredInt("shared_expert_intermediate_size", 1, kMaxDim));
      s.shared_expert_gate = true;  // Qwen2MoeSparseMoeBlock.shared_expert_gate
    }
    // intermediate_size only matters for the dense layers; when there are none the class default
    // stands in, as it would in transformers.
    const bool has_dense_layer = s.NumMoeLayers() < s.num_hidden_layers;
    const int64_t class_default = arch == Arch::kQwen2Moe ? 5632 : 6144;
    if (has_dense_layer) {
      DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
    } else {
      DSP_ASSIGN_OR_RETURN(s.intermediate_size,
                           r.IntOr("intermediate_size", class_default, 1, kMaxDim));
    }
  } else {
    DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  }

  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace dsp::model_internal

