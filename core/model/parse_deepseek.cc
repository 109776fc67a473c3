// SPDX-License-Identifier: Apache-2.0
// deepseek_v2 and deepseek_v3 (transformers configuration_deepseek_v2/v3.py and the published
// config.json files): multi-head latent attention and DeepSeekMoE (routed experts, one shared MLP
// of n_shared_experts x moe_intermediate_size, the first first_k_dense_replace layers dense); and
// glm4_moe, DeepSeekMoE under grouped-query attention.
#include <optional>
#include <string>
#include <utility>

#include "core/model/config_reader.h"

namespace dsp::model_internal {

namespace {

// DeepSeekMoE as DeepseekV2/V3 and Glm4Moe read it: routed experts (n_routed_experts, null for a
// dense model; attribute_map aliases `routed_alias`), one shared MLP of n_shared_experts x
// moe_intermediate_size, the first first_k_dense_replace layers dense, group-limited routing, and
// with `score_bias` the router's e_score_correction_bias [E] (V3's and GLM's noaux_tc).
// The class defaults stand in for keys a config leaves out: `defaults` {routed experts (0: none,
// a dense model, as DeepseekV2/V3's None), shared experts, dense first layers}.
struct MoeDefaults {
  int64_t routed = 0, shared = 0, first_dense = 0;
};

Status ReadDeepSeekMoe(ModelSpec& s, const Reader& r, const char* routed_alias, bool score_bias,
                       bool default_norm_topk, MoeDefaults defaults = {}) {
  auto read = [&]() -> Result<bool> {
    std::optional<int64_t> routed;
    DSP_ASSIGN_OR_RETURN(routed, r.AnyInt({"n_routed_experts", routed_alias}, 1, kMaxCount));
    if (!routed && defaults.routed > 0) routed = defaults.routed;
    if (!routed) return true;
    s.num_experts = *routed;
    DSP_ASSIGN_OR_RETURN(s.num_experts_per_tok, r.RequiredInt("num_experts_per_tok", 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.moe_intermediate_size, r.RequiredInt("moe_intermediate_size", 1, kMaxDim));
    int64_t shared = 0;
    DSP_ASSIGN_OR_RETURN(shared, r.IntOr("n_shared_experts", defaults.shared, 0, kMaxCount));
    s.shared_expert_intermediate_size = shared * s.moe_intermediate_size;
    // Layer i is MoE iff i >= first_k_dense_replace (DeepseekV2DecoderLayer /
    // DeepseekV3DecoderLayer). moe_layer_freq, which DeepSeek's own modeling code also tested, is
    // not a transformers field (1 in every published config), so it is not read.
    s.sparse_step_from_zero = true;
    DSP_ASSIGN_OR_RETURN(s.first_dense_layers, r.IntOr("first_k_dense_replace", defaults.first_dense, 0, kMaxCount));
    s.decoder_sparse_step = 1;
    DSP_ASSIGN_OR_RETURN(s.norm_topk_prob, r.BoolOr("norm_topk_prob", default_norm_topk));
    s.router_score_bias = score_bias;
    // Group-limited routing: scores viewed as [n_group, E / n_group], the best topk_group groups
    // kept (transformers DeepseekV3TopkRouter.get_topk_indices; V2's group_limited_greedy).
    DSP_ASSIGN_OR_RETURN(s.n_group, r.IntOr("n_group", 1, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.topk_group, r.IntOr("topk_group", 1, 1, kMaxCount));
    DSP_ASSIGN_OR_RETURN(s.topk_method, r.StringOr("topk_method", ""));
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
    return true;
  };
  Result<bool> ok = read();
  if (!ok.ok()) return ok.error();
  return Status::Ok();
}

// The multi-token-prediction layer(s) the checkpoint ships after the decoder: dropped on load
// (DeepseekV3PreTrainedModel._keys_to_ignore_on_load_unexpected; Glm4MoePreTrainedModel's
// model.layers.46 / 92) and counted apart.
Status ReadMtpLayers(ModelSpec& s, const Reader& r) {
  auto read = [&]() -> Result<bool> {
    DSP_ASSIGN_OR_RETURN(s.mtp_layers, r.IntOr("num_nextn_predict_layers", 0, 0, 16));
    return true;
  };
  Result<bool> ok = read();
  if (!ok.ok()) return ok.error();
  if (s.mtp_layers > 0) {
    s.left_out.push_back(std::to_string(s.mtp_layers) +
                         " multi-token-prediction layer(s) of the checkpoint (not trained by "
                         "transformers; counted apart)");
  }
  return Status::Ok();
}

}  // namespace

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
  // attribute_map aliases of n_routed_experts: V2 num_experts, V3 num_local_experts. DeepseekV3's
  // TopkRouter always holds e_score_correction_bias [E] (a persistent buffer, in the checkpoint);
  // V2's gate has none.
  Status moe = ReadDeepSeekMoe(s, r, v3 ? "num_local_experts" : "num_experts", v3, v3);
  if (!moe.ok()) return moe.error();
  Status mtp = ReadMtpLayers(s, r);
  if (!mtp.ok()) return mtp.error();
  Status status = ValidateSpec(s, r, true);
  if (!status.ok()) return status.error();
  return s;
}

// Glm4MoeConfig (GLM-4.5, GLM-4.5-Air, GLM-4.6; transformers models/glm4_moe/modular_glm4_moe.py):
// DeepseekV3's decoder, MoE and router with grouped-query attention in place of MLA. q/k/v carry
// attention_bias, o_proj never does (Glm4MoeAttention); use_qk_norm adds RMSNorms over head_dim on
// q and k; head_dim defaults to hidden / heads; partial_rotary_factor (0.5 unless given,
// Glm4MoeConfig.__post_init__) of each head is rotated. The router keeps V3's
// e_score_correction_bias buffer.
Result<ModelSpec> ParseGlm4Moe(ModelSpec s, const Reader& r) {
  s.family = ModelFamily::kDeepSeek;
  bool head_dim_given = false;
  Status core = ReadDecoderCore(s, r, 0, 131072, false, &head_dim_given);
  if (!core.ok()) return core.error();
  DSP_ASSIGN_OR_RETURN(s.attention_bias, r.BoolOr("attention_bias", false));
  s.o_proj_bias = false;
  DSP_ASSIGN_OR_RETURN(s.qk_norm, r.BoolOr("use_qk_norm", false));
  DSP_ASSIGN_OR_RETURN(s.rotary_fraction, r.FractionOr("partial_rotary_factor", 0.5));
  DSP_ASSIGN_OR_RETURN(s.intermediate_size, r.RequiredInt("intermediate_size", 1, kMaxDim));
  // attribute_map = {"num_local_experts": "n_routed_experts"}; Glm4MoeConfig's defaults: 128
  // routed experts, 1 shared, 1 dense first layer, norm_topk_prob True.
  Status moe = ReadDeepSeekMoe(s, r, "num_local_experts", true, true, {.routed = 128, .shared = 1, .first_dense = 1});
  if (!moe.ok()) return moe.error();
  Status mtp = ReadMtpLayers(s, r);
  if (!mtp.ok()) return mtp.error();
  Status status = ValidateSpec(s, r, head_dim_given);
  if (!status.ok()) return status.error();
  return s;
}

}  // namespace dsp::model_internal
