// SPDX-License-Identifier: Apache-2.0
// transformers' tensor-parallel plans as data, and DeepSpeed's conversion of them: with
// autotp_size > 1 and neither tensor_parallel.preset_model nor a partition_config,
// DeepSpeedEngine._apply_autotp_partitioning (runtime/engine.py, 0.19.6) merges the model
// config's base_model_tp_plan with the *ForCausalLM class's _tp_plan (_get_hf_tp_plan in
// runtime/tensor_parallel/config.py) and hands it to TPPlanConverter.convert
// (module_inject/tp_plan_converter.py). Only an empty plan falls back to the heuristic parser.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/rules/tensor_parallel_internal.h"

namespace dsp::autotp {
namespace {

using Entries = std::vector<HfTpPlanEntry>;

// The plans of transformers 5 after PR #42809 (colwise_rep renamed colwise_gather_output; first
// released in 5.1.0), from src/transformers/models/<type>/configuration_<type>.py
// (base_model_tp_plan, in dict order) and modeling_<type>.py (the CausalLM's _tp_plan, merged
// last). Model types without a plan (gpt2, bloom, falcon) are absent: DeepSpeed uses its heuristic
// AutoTP.tp_parser for them. gpt_oss is absent too: its plan moved between base_model_tp_plan and
// base_model_ep_plan across 5.x releases (tp-model-unsupported covers it either way).
const std::map<std::string, Entries>& PlanTable() {
  static const auto* table = [] {
    const HfTpPlanEntry lm_head = {"lm_head", "colwise_gather_output"};
    const Entries attention = {{"layers.*.self_attn.q_proj", "colwise"},
                               {"layers.*.self_attn.k_proj", "colwise"},
                               {"layers.*.self_attn.v_proj", "colwise"}};
    const Entries qk_norms = {{"layers.*.self_attn.q_norm", "replicated_with_grad_allreduce"},
                              {"layers.*.self_attn.k_norm", "replicated_with_grad_allreduce"}};
    const HfTpPlanEntry o_proj = {"layers.*.self_attn.o_proj", "rowwise"};
    const Entries mlp = {{"layers.*.mlp.gate_proj", "colwise"},
                         {"layers.*.mlp.up_proj", "colwise"},
                         {"layers.*.mlp.down_proj", "rowwise"}};
    const Entries fused_experts = {{"layers.*.mlp.experts.gate_up_proj", "packed_colwise"},
                                   {"layers.*.mlp.experts.down_proj", "rowwise"},
                                   {"layers.*.mlp.experts", "moe_tp_experts"}};
    const Entries shared_experts = {{"layers.*.mlp.shared_experts.gate_proj", "colwise"},
                                    {"layers.*.mlp.shared_experts.up_proj", "colwise"},
                                    {"layers.*.mlp.shared_experts.down_proj", "rowwise"}};
    const Entries shared_expert = {{"layers.*.mlp.shared_expert.gate_proj", "colwise"},
                                   {"layers.*.mlp.shared_expert.up_proj", "colwise"},
                                   {"layers.*.mlp.shared_expert.down_proj", "rowwise"}};
    auto cat = [](std::initializer_list<Entries> parts) {
      Entries out;
      for (const Entries& p : parts) out.insert(out.end(), p.begin(), p.end());
      return out;
    };
    auto* t = new std::map<std::string, Entries>();
    const Entries dense = cat({attention, {o_proj}, mlp, {lm_head}});
    for (const char* type : {"llama", "mistral", "qwen2", "qwen2_moe", "gemma2"}) (*t)[type] = dense;
    const Entries qk_norm_dense = cat({attention, qk_norms, {o_proj}, mlp, {lm_head}});
    (*t)["qwen3"] = qk_norm_dense;
    (*t)["gemma3_text"] = qk_norm_dense;
    (*t)["mixtral"] = cat({attention, {o_proj}, fused_experts, {lm_head}});
    (*t)["qwen3_moe"] = cat({attention, qk_norms, {o_proj}, fused_experts, mlp, {lm_head}});
    (*t)["deepseek_v2"] = cat({{{"layers.*.self_attn.q_proj", "colwise"},
                                {"layers.*.self_attn.q_b_proj", "colwise"},
                                {"layers.*.self_attn.kv_a_proj_with_mqa", "mla_kv_a_proj"},
                                {"layers.*.self_attn.kv_b_proj", "colwise"},
                                o_proj},
                               fused_experts, shared_experts, mlp, {lm_head}});
    (*t)["deepseek_v3"] = cat({fused_experts, shared_experts, mlp, {lm_head}});
    // glm4_moe: grouped-query attention over DeepseekV3's MoE (modular_glm4_moe.py).
    (*t)["glm4_moe"] = cat({attention, {o_proj}, fused_experts, shared_experts, mlp, {lm_head}});
    (*t)["llama4_text"] = cat(
        {attention,
         {o_proj,
          {"layers.*.feed_forward.shared_expert.gate_proj", "colwise"},
          {"layers.*.feed_forward.shared_expert.up_proj", "colwise"},
          {"layers.*.feed_forward.shared_expert.down_proj", "rowwise"},
          {"layers.*.feed_forward.experts.gate_up_proj", "packed_rowwise"},
          {"layers.*.feed_forward.experts.down_proj", "colwise"},
          {"layers.*.feed_forward.gate_proj", "colwise"},
          {"layers.*.feed_forward.up_proj", "colwise"},
          {"layers.*.feed_forward.down_proj", "rowwise"},
          lm_head}});
    const Entries qwen3_5_linear = {{"layers.*.linear_attn.in_proj_qkv", "colwise_gather_output"},
                                    {"layers.*.linear_attn.in_proj_z", "colwise_gather_output"},
                                    {"layers.*.linear_attn.in_proj_b", "colwise_gather_output"},
                                    {"layers.*.linear_attn.in_proj_a", "colwise_gather_output"},
                                    {"layers.*.linear_attn.out_proj", "colwise_gather_output"}};
    (*t)["qwen3_next"] = cat(
        {attention, qk_norms, {o_proj},
         {fused_experts[0], fused_experts[1]}, shared_expert, {fused_experts[2]}, mlp,
         {{"layers.*.linear_attn.in_proj_qkvz", "colwise_gather_output"},
          {"layers.*.linear_attn.in_proj_ba", "colwise_gather_output"},
          {"layers.*.linear_attn.out_proj", "colwise_gather_output"},
          lm_head}});
    (*t)["qwen3_5"] = cat({attention, {o_proj}, qk_norms, mlp, qwen3_5_linear, {lm_head}});
    (*t)["qwen3_5_moe"] = cat({attention, {o_proj}, qk_norms, fused_experts, shared_expert,
                               qwen3_5_linear, {lm_head}});
    (*t)["phi3"] = {{"layers.*.self_attn.qkv_proj", "colwise_gather_output"},
                    {"layers.*.self_attn.o_proj", "rowwise_split_input"},
                    {"layers.*.mlp.gate_up_proj", "colwise_gather_output"},
                    {"layers.*.mlp.down_proj", "rowwise_split_input"},
                    lm_head};
    (*t)["gpt_neox"] = {{"layers.*.attention.query_key_value", "colwise"},
                        {"layers.*.attention.dense", "rowwise"},
                        {"layers.*.mlp.dense_h_to_4h", "colwise"},
                        {"layers.*.mlp.dense_4h_to_h", "rowwise"},
                        {"embed_out", "colwise_rep"}};
    return t;
  }();
  return *table;
}

}  // namespace

const std::vector<HfTpPlanEntry>* HfTpPlan(const ModelSpec& model) {
  // A multimodal checkpoint's plan is the wrapper's (its config's base_model_tp_plan is not the
  // text model's, and transformers expands the instance plan at load time): not modelled.
  if (model.name_prefix != "model.") return nullptr;
  const std::string type = model.model_type == "llama4" ? "llama4_text" : model.model_type;
  auto it = PlanTable().find(type);
  return it == PlanTable().end() ? nullptr : &it->second;
}

std::vector<std::string> UnsupportedHfStyles(const std::vector<HfTpPlanEntry>& plan,
                                             const DeepSpeedVersion& version) {
  // SUPPORTED_STYLES; replicated_with_grad_allreduce joined it with PR #8204 (0.19.6).
  std::set<std::string> supported = {"colwise", "colwise_rep", "colwise_gather_output", "rowwise"};
  if (version >= ds_release::kAutoTpHfPlanStrict) supported.insert("replicated_with_grad_allreduce");
  std::set<std::string> bad;
  for (const HfTpPlanEntry& e : plan) {
    if (!supported.contains(e.style)) bad.insert(e.style);  // the plans are lower-case already
  }
  return {bad.begin(), bad.end()};  // sorted, as the ValueError lists them
}

std::string HfPatternRegex(const std::string& pattern) {
  // TPPlanConverter._wildcard_to_regex, then the .weight suffix convert() appends.
  std::string regex = ".*";
  for (char c : pattern) {
    if (c == '.') {
      regex += "\\.";
    } else if (c == '*') {
      regex += ".*";
    } else {
      regex += c;
    }
  }
  return regex.ends_with("\\.weight") ? regex + "$" : regex + "\\.weight$";
}

std::vector<LayerSpec> HfPlanSpecs(const std::vector<HfTpPlanEntry>& plan,
                                   const std::string& pointer) {
  std::vector<LayerSpec> out;
  for (const HfTpPlanEntry& e : plan) {
    const std::string style = e.style;
    LayerSpec s;
    s.pointer = pointer;
    s.label = "transformers tp_plan entry \"" + std::string(e.pattern) + "\": \"" + style + "\"";
    s.from_preset = true;
    if (style == "colwise" || style == "colwise_rep" || style == "colwise_gather_output") {
      s.kind = PartitionKind::kColumn;
      s.gather_output = style != "colwise";
    } else if (style == "rowwise") {
      s.kind = PartitionKind::kRow;
    } else {
      s.kind = PartitionKind::kSkip;
      s.grad_allreduce = style == "replicated_with_grad_allreduce";
    }
    s.partition_dim = s.kind == PartitionKind::kRow ? 1 : 0;
    SpecPattern sp;
    sp.pointer = pointer;
    sp.regex = CompilePythonRegex(HfPatternRegex(e.pattern));
    sp.digit_blind = IsIndexBlind(HfPatternRegex(e.pattern));
    s.patterns.push_back(std::move(sp));
    out.push_back(std::move(s));
  }
  return out;
}

bool HasCustomPartitionConfig(const ConfigView& view) {
  // TPTrainingConfig.get_partition_config_object: `if self.partition_config:`, so {} is none.
  const Json* pc = view.Get(kPartitionConfig);
  return pc != nullptr && pc->is_object() && !pc->empty();
}

std::optional<std::string> PresetFor(const ModelSpec& model) {
  const std::string& t = model.model_type;
  if (t == "mixtral") return "mixtral";
  if (t == "deepseek_v2" || t == "deepseek_v3") return "deepseek_v2";
  if (t == "phi3") return "phi3";
  if (t == "llama" || t == "mistral") return "llama";
  if (t == "qwen2") return "qwen2";
  return std::nullopt;
}

}  // namespace dsp::autotp
