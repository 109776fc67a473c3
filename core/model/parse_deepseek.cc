// SPDX-License-Identifier: Apache-2.0
// deepseek_v2 and deepseek_v3 (transformers configuration_deepseek_v2/v3.py and the published
// config.json files): multi-head latent attention and DeepSeekMoE (routed experts, one shared MLP
// of n_shared_experts x moe_intermediate_size, the first first_k_dense_replace layers dense).
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp::model_internal {

Result<ModelSpec> ParseDeepSeek(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kDeepSeek;
  const bool v3 = s.model_type == "deepseek_v3" || s.model_type == "kimi_k2";
  bool head_dim_given = false;
  Status core = ReadDecoderCore(s, r, 0, v3 ? 4096 : 2048, false, &head_dim_given);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", false));
  // DeepseekV2Config.mlp_bias biases the dense and shared MLPs; V3's MLP has no bias option.
  if (!v3) DSP_ASSIGN_OR_RETURN(s.mlp_bias, r.BoolOr("mlp_bias", false));
  // MLA: q_lora_rank null means a plain q_proj (DeepSeek-V2-Lite).
  DSP_ASSIGN_OR_RETURN(s.q_lora_rank, r.IntOr("q_lora_rank", 0, 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.kv_lora_rank, r.RequiredInt("kv_lora_rank", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.qk_nope_head_dim, r.RequiredInt("qk_nope_head_dim", 0, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.qk_rope_head_dim, r.RequiredInt("qk_rope_head_dim", 1, kMaxDim));
  DSP_ASSIGN_OR_RETURN(s.v_head_dim, r.RequiredInt("v_head_dim", 1, kMaxDim));
  // head_dim in these configs is the rotary width; the attention kernels use qk_head_dim().
  s.head_dim = s.qk_head_dim();
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));

  // n_routed_experts null: a dense model. attribute_map aliases: V2 num_experts, V3
  // num_local_experts.
  std::optional<int64_t> routed;
  DSP_ASSIGN_OR_RETURN(routed, r.AnyInt({"n_routed_experts", v3 ? "num_local_experts" : "num_experts"},
                                        1, kMaxCount));
  if (routed) {
    s.num_experts = *routed;
    DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.moe_intermediate_size, r.RequiredInt("moe_intermediate_size", 1, kMaxDim));
    int64_t shared = 0;
    DSP_ASSIGN_OR_RETURN(shared, r.IntOr("n_shared_experts", 0, 0, kMaxCount));
    s.shared_expert_intermediate_size = shared * s.moe_intermediate_size;
    // Layer i is MoE iff i >= first_k_dense_replace (DeepseekV2DecoderLayer /
    // DeepseekV3DecoderLayer). moe_layer_freq, which DeepSeek's own modeling code also tested, is
    // not a transformers field (1 in every published config), so it is not read.
    s.sparse_step_from_zero = true;
    DSP_ASSIGN_OR_RETURN(s.first_dense_layers, r.IntOr("first_k_dense_replace", 0, 0, kMaxCount));
    s.decoder_sparse_step = 1;
    DSP_ASSIGN_OR_RETURN(s.norm_topk_prob, r.BoolOr("norm_topk_prob", v3));
    // DeepseekV3TopkRouter always holds e_score_correction_bias [E] (a persistent buffer, in the
    // checkpoint); V2's gate has none.
    s.router_score_bias = v3;
    // Group-limited routing: scores viewed as [n_group, E / n_group], the best topk_group groups
    // kept (transformers DeepseekV3TopkRouter.get_topk_indices; V2's group_limited_greedy).
    DSP_ASSIGN_OR_RETURN(s.n_group, r.IntOr("n_group", 1, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.topk_group, r.IntOr("topk_group", 1, 1, kMaxCount));
    if (s.num_experts % s.n_group != 0) {
      return r.Fail("n_group", "must divide n_routed_experts (" + std::to_string(s.num_experts) +
                                   "): the router views its scores as [n_group, E / n_group] (got " +
                                   std::to_string(s.n_group) + ")");
    }
    if (s.topk_group > s.n_group) {
      return r.Fail("topk_group", "must be at most n_group (" + std::to_string(s.n_group) + "; got " +
                                      std::to_string(s.topk_group) + ")");
    }
    if (s.num_experts_per_tok > s.topk_group * (s.num_experts / s.n_group)) {
      return r.Fail("num_experts_per_tok", "must fit in topk_group (" + std::to_string(s.topk_group) +
                                               ") groups of " + std::to_string(s.num_experts / s.n_group) +
                                               " experts (got " + std::to_string(s.num_experts_per_tok) + ")");
    }
  }
  // The MTP module(s) ship in the V3 checkpoint as layers num_hidden_layers.. and are dropped on
  // load (DeepseekV3PreTrainedModel._keys_to_ignore_on_load_unexpected).
  DSP_ASSIGN_OR_RETURN(s.mtp_layers, r.IntOr("num_nextn_predict_layers", 0, 0, 16));
  if (s.mtp_layers > 0) {
    s.left_out.push_back(std::to_string(s.mtp_layers) +
                         " multi-token-prediction layer(s) of the checkpoint (not trained by "
                         "transformers; counted apart)");
  }
  Status status = ValidateSpec(s, r, true);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace dsp::model_internal
