// SPDX-License-Identifier: Apache-2.0
// AutoEP (`expert_parallel`): parse_autoep_config and
// validate_autoep_config in module_inject/auto_ep_config.py, the engine's AutoEP checks
// (_configure_expert_parallel, _validate_zero3_moe_compatibility, validate_autoep_post_detection),
// and the release history. The group sizes and validate_folding_global are in folding_rules.cc.
#include <algorithm>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "core/rules/autoep_detection.h"
#include "core/rules/ds_semantics.h"
#include "core/rules/expert_parallel_internal.h"
#include "core/rules/python_regex.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace autoep {

std::optional<int64_t> PyInt(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

EpFacts ReadFacts(const RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  EpFacts f;
  if (const Json* e = v.Get(Key("enabled"))) f.enabled = ds_semantics::PyTruthy(*e);
  f.ep = 1;
  if (const Json* j = v.Get(Key("autoep_size"))) {
    f.ep_given = true;
    f.ep = PyInt(*j);
  }
  f.etp = 1;
  if (const Json* j = v.Get(Key("expert_tensor_parallel_size"))) f.etp = PyInt(*j);
  f.tp = std::max<int64_t>(ctx.parallel().tp, 1);
  f.sp = std::max<int64_t>(v.Int("/sequence_parallel_size").or_default(1), 1);
  f.pp = ctx.options().pp;
  f.world = ctx.world();
  f.zero_stage = ds_semantics::EffectiveZeroStage(ctx);
  f.data_before = ds_semantics::DictFlag(v, "/use_data_before_expert_parallelism");
  f.folding_release = ctx.version() >= ds_release::kAutoEpFolding;
  return f;
}

}  // namespace autoep

namespace {

using autoep::EpFacts;
using autoep::Key;
using ds_semantics::ShowValue;


using autoep::Detect;
using autoep::Detection;
using autoep::IsNull;
using autoep::PresetMiss;

void CheckSection(RuleContext& ctx, const Json& section) {
  const ConfigView& v = ctx.view();
  if (const Json* lbc = v.Get(Key("load_balance_coeff")); lbc != nullptr && !lbc->is_null()) {
    ctx.Report(
        "ep-load-balance-coeff", Key("load_balance_coeff"),
        "load_balance_coeff=" + ShowValue(*lbc) +
            " is not supported in this AutoEP build "
            "(would register expert_bias and route through unsupported auxiliary-loss-free load "
            "balancing): DeepSpeed raises ValueError while parsing the config, even with AutoEP "
            "disabled",
        "set load_balance_coeff to null or omit the key");
  }
  const Json* enabled = v.Get(Key("enabled"));
  if (enabled != nullptr && !enabled->is_boolean()) {
    // DeepSpeed does what 1, 0 or "true" mean; "false", "no" or "0" turn AutoEP on.
    const bool on = ds_semantics::PyTruthy(*enabled);
    const std::optional<bool> says = ds_semantics::PydanticBool(v, Key("enabled"), on);
    const bool inverted = says.has_value() && *says != on;
    ctx.ReportAs(inverted ? Severity::kError : Severity::kWarning, "ep-enabled-not-bool", Key("enabled"),
                 "expert_parallel.enabled is " + ShowValue(*enabled) +
                     ", not a boolean: DeepSpeed tests its truthiness, so AutoEP is " +
                     std::string(on ? "ON" : "off") + " for this value" +
                     (inverted ? ", the opposite of what it says" : ""),
                 std::string("write ") + (says.value_or(on) ? "true" : "false"));
  }
  EpFacts f = autoep::ReadFacts(ctx);
  if (f.enabled) return;
  std::vector<std::string> ignored;
  for (const auto& [key, value] : section.items()) {
    if (key == "enabled" || key.starts_with("_") ||
        (key == "load_balance_coeff" && value.is_null()))
      continue;
    ignored.push_back(key);
  }
  if (ignored.empty()) return;
  ctx.Report("ep-disabled-settings", enabled != nullptr ? Key("enabled") : std::string(autoep::kSection),
             "expert_parallel sets " + JoinList(ignored) + " but enabled is " +
                 (enabled != nullptr ? ShowValue(*enabled) : std::string("absent (false)")) +
                 ": DeepSpeed returns before reading them, so AutoEP does not run and the settings "
                 "are silently ignored",
             "set \"enabled\": true to use AutoEP, or remove the section");
}

// runtime/zero/stage_1_and_2.py _configure_moe_settings (0.19.6), run for a model with MoE
// layers: reduce_scatter must stay on, and at stage 2 contiguous_gradients too (turned on anyway
// with the optimizer offloaded to any device); at stage 1 without it DeepSpeed only warns. Stage 1 with
// bf16 and fp32 gradient accumulation (no cpu offload) runs BF16_Optimizer instead
// (engine.py _do_optimizer_sanity_check), which has no such checks.
void CheckZero12(RuleContext& ctx, int64_t stage) {
  const ConfigView& v = ctx.view();
  const std::string device = ds_semantics::OffloadDevice(v, "offload_optimizer");
  const bool cpu_offload = device == "cpu";
  // stage_1_and_2.py sets cpu_offload for any device but none, and turns contiguous_gradients on.
  const bool offloaded = device != "none";
  const Json* accum = v.Get("/data_types/grad_accum_dtype");
  const bool fp32_accum = accum != nullptr && accum->is_string() &&
                          (*accum == "fp32" || *accum == "float32" || *accum == "float" ||
                           *accum == "torch.float32");
  if (stage == 1 && ds_semantics::Bf16Enabled(v) && fp32_accum && !cpu_offload) return;
  const std::string zero = "/zero_optimization";
  if (!ds_semantics::PydanticBool(v, zero + "/reduce_scatter", true).value_or(true)) {
    ctx.Report("ep-zero-moe-settings", zero + "/reduce_scatter",
               "reduce_scatter is off with AutoEP at ZeRO stage " + std::to_string(stage) +
                   ": the ZeRO optimizer asserts \"Reduce Scatter in ZeRO Stage 2 must be set to "
                   "True for MoE\" (stage_1_and_2.py _configure_moe_settings)",
               "remove \"reduce_scatter\": false");
  }
  if (offloaded || ds_semantics::PydanticBool(v, zero + "/contiguous_gradients", true).value_or(true)) {
    return;
  }
  if (stage == 2) {
    ctx.Report("ep-zero-moe-settings", zero + "/contiguous_gradients",
               "contiguous_gradients is off with AutoEP at ZeRO stage 2: the ZeRO optimizer asserts "
               "\"Contiguous Gradients in ZeRO Stage 2 must be set to True for MoE\" "
               "(stage_1_and_2.py _configure_moe_settings)",
               "remove \"contiguous_gradients\": false");
  } else {
    ctx.ReportAs(Severity::kWarning, "ep-zero-moe-settings", zero + "/contiguous_gradients",
                 "contiguous_gradients is off with AutoEP at ZeRO stage 1: DeepSpeed warns \"ZeRO "
                 "Stage 1 has not been thoroughly tested with MoE. This configuration is still "
                 "experimental.\"",
                 "remove \"contiguous_gradients\": false");
  }
}

void CheckEngine(RuleContext& ctx, const EpFacts& f) {
  const ConfigView& v = ctx.view();
  if (!f.folding_release && f.tp > 1) {
    ctx.Report("ep-autotp-unsupported", "/tensor_parallel/autotp_size",
               "AutoEP does not currently support AutoTP (tensor_parallel.autotp_size=" + std::to_string(f.tp) +
                   "): DeepSpeed " + ctx.version().ToString() +
                   " raises ValueError; AutoEP+AutoTP "
                   "folding arrived later (PR #8064)",
               "disable AutoTP for this run, or target a DeepSpeed with AutoEP+AutoTP folding");
  }
  if (f.tp <= 1 && f.sp > 1 && f.data_before) {
    ctx.Report("ep-data-before-sequence-parallel", "/use_data_before_expert_parallelism",
               "use_data_before_expert_parallel_ is not supported with mp_size > 1 "
               "(sequence_parallel_size=" +
                   std::to_string(f.sp) +
                   "): groups._create_expert_and_data_parallel raises NotImplementedError",
               "remove use_data_before_expert_parallelism, or run without sequence parallelism");
  }
  // The ZeRO optimizers' MoE checks run when the engine has MoE layers (has_moe_layers): AutoEP
  // replaced some, which with --model means its detection found them, and without it is assumed.
  const ModelSpec* m = ctx.options().model;
  if (m != nullptr && Detect(*m, autoep::ReadDetectionKeys(v)) != Detection::kFound) return;
  if (f.zero_stage && (*f.zero_stage == 1 || *f.zero_stage == 2)) CheckZero12(ctx, *f.zero_stage);
  if (!f.zero_stage || *f.zero_stage != 3) return;
  const std::string stage_ptr =
      v.Has("/zero_optimization/stage") ? "/zero_optimization/stage" : "/zero_optimization";
  if (ctx.version() < autoep::kAutoEpZero3) {
    ctx.Report(
        "ep-zero3-unsupported", stage_ptr,
        "MoE not supported with Stage 3: DeepSpeed " + ctx.version().ToString() +
            " rejects any MoE model, AutoEP included, under ZeRO stage 3 (AutoEP gained ZeRO-3 "
            "support in PR #8060)",
        "use ZeRO stage 1 or 2, or target a newer DeepSpeed");
    return;
  }
  auto reject = [&](const std::string& ptr, const std::string& what) {
    ctx.Report("ep-zero3-unsupported", ptr,
               "AutoEP with ZeRO Stage 3 does not support " + what +
                   ": the engine's _validate_zero3_moe_compatibility raises AssertionError",
               "remove it, or use ZeRO stage 1 or 2 with AutoEP");
  };
  if (f.sp > 1)
    reject("/sequence_parallel_size",
           "sequence parallelism yet (sequence_parallel_size=" + std::to_string(f.sp) + ")");
  for (const char* p : {"/zero_optimization/zero_quantized_gradients"}) {
    if (ds_semantics::PydanticBool(v, p, false).value_or(false)) {
      reject(p, "zero_quantized_gradients or LoCo quantized gradients yet");
    }
  }
  if (auto mics = v.Int("/zero_optimization/mics_shard_size"); mics.present() && mics.value > 0) {
    reject(mics.pointer, "MiCS yet (mics_shard_size=" + std::to_string(mics.value) + ")");
  }
  if (auto hpz = v.Int("/zero_optimization/zero_hpz_partition_size");
      hpz.present() && hpz.value > 1) {
    reject(hpz.pointer,
           "hpZeRO secondary tensor groups yet (zero_optimization.zero_hpz_partition_size=" +
               std::to_string(hpz.value) + ")");
  }
}

void CheckEpModel(RuleContext& ctx, const EpFacts& f) {
  const ModelSpec* m = ctx.options().model;
  if (m == nullptr) return;
  const ConfigView& cfg = ctx.view();
  const autoep::DetectionKeys keys = autoep::ReadDetectionKeys(cfg);
  if (!m->is_moe() && Detect(*m, keys) == Detection::kPresetMatchesNone) {
    const std::string key = keys.preset_model ? "preset_model" : "moe_layer_pattern";
    ctx.Report("ep-preset-no-moe", Key(key),
               "AutoEP is enabled with " + key + " on this " + m->model_type +
                   " model, which has no MoE layers: DeepSpeed raises ValueError \"AutoEP: no MoE "
                   "layers detected for " + key + "=...\" (auto_ep.py)",
               "disable expert_parallel for dense models");
    return;
  }
  if (!m->is_moe()) {
    ctx.Report("ep-dense-model", Key("enabled"),
               "AutoEP is enabled but this " + m->model_type +
                   " model has no MoE layers: AutoEP detects "
                   "none, replaces nothing, and the expert_parallel settings have no effect",
               "disable expert_parallel for dense models");
    return;
  }
  // What AutoEP's detection finds (autoep_detection.h: the presets' module pattern against the
  // model's layout under transformers 5).
  const Json* preset = cfg.Get(Key("preset_model"));
  const bool explicit_preset = keys.preset_model;
  const Detection found = Detect(*m, keys);
  if (found == Detection::kNotFound || found == Detection::kPresetMatchesNone) {
    const std::string where = PresetMiss(*m);
    if (found == Detection::kPresetMatchesNone) {
      ctx.Report("ep-preset-no-moe", Key("preset_model"),
                 "preset_model '" + preset->get<std::string>() + "' matches no MoE layer of this " +
                     m->model_type + " model (" + where +
                     "): DeepSpeed raises ValueError \"AutoEP: no MoE layers detected\"",
                 "no AutoEP preset supports " + m->model_type +
                     "; disable expert_parallel or give moe_layer_pattern and router_pattern");
    } else {
      ctx.Report("ep-moe-not-detected", Key("enabled"),
                 "AutoEP is enabled but detects no MoE layer in this " + m->model_type +
                     " model (" + where + "): DeepSpeed logs \"AutoEP: no MoE layers detected "
                     "in model.\" and trains without expert parallelism",
                 "no AutoEP preset supports " + m->model_type +
                     " (presets: mixtral, qwen3_moe, qwen3_5_moe, deepseek_v2, deepseek_v3)");
    }
    return;
  }
  if (found == Detection::kAmbiguous) {
    const bool glm = m->model_type == "glm4_moe";
    ctx.Report("ep-detection-ambiguous", Key("enabled"),
               "AutoEP has no preset for model_type '" + m->model_type +
                   "', so it tries all five; each matches this model's MoE blocks as transformers 5 "
                   "builds them (model.layers.N.mlp with a router and fused `experts`): DeepSpeed raises ValueError "
                   "\"AutoEP detection is ambiguous and produced multiple replacement specs for "
                   "the same MoE module(s)\"",
               m->family == ModelFamily::kGptOss
                   ? std::string("give moe_layer_pattern (model\\.layers\\.\\d+\\.mlp) with the "
                                 "router_pattern, so one custom preset detects the blocks")
                   : std::string("set expert_parallel.preset_model to the preset that routes as the "
                                 "model was trained (") +
                         (glm ? "GLM-4.5: sigmoid scores, group-limited top-k, as deepseek_v3"
                              : "Qwen3-Next: softmax top-k renormalised with a gated shared expert, "
                                "as qwen3_moe") +
                         "), or give moe_layer_pattern");
    return;
  }
  // An explicit preset is used as given, without checking the model type (registry.py
  // resolve_preset_candidates), with the config's overrides applied (apply_config_overrides).
  // ep_parser (auto_ep.py) takes the score function from a score_func other than "auto", else
  // the model config's scoring_func when it has one (DeepSeek-V2/V3, Kimi K2), else the preset's;
  // top-k renormalisation from route_norm, else norm_topk_prob, except under deepseek_v2's preset,
  // which keeps its own (no renormalisation: deepseek_v2.py resolve_route_norm); the group counts
  // from n_group/topk_group. The shared experts are found only under the preset's pattern (or the
  // config's shared_experts_pattern; mixtral has none) and are left out of the replacement block
  // otherwise.
  if (explicit_preset) {
    const std::string name = preset->get<std::string>();
    const bool deepseek_preset = name == "deepseek_v2" || name == "deepseek_v3";
    const std::string model_shared = m->shared_expert_intermediate_size <= 0 ? ""
                                      : m->family == ModelFamily::kDeepSeek  ? "shared_experts"
                                                                             : "shared_expert";
    bool preset_has_shared = name != "mixtral";
    if (const Json* h = cfg.Get(Key("has_shared_experts")); h != nullptr && h->is_boolean()) preset_has_shared = h->get<bool>();
    std::string preset_shared = deepseek_preset ? "shared_experts" : "shared_expert";
    if (const Json* sp = cfg.Get(Key("shared_experts_pattern")); sp != nullptr && sp->is_string()) {
      preset_shared = sp->get<std::string>();
    }
    if (!preset_has_shared) preset_shared.clear();
    std::vector<std::string> changes;
    if (!model_shared.empty() && model_shared != preset_shared) {
      changes.push_back("the block's shared experts (`" + model_shared + "`) are left out of the replacement (the preset " +
                        (preset_shared.empty() ? std::string("has none") : "looks for `" + preset_shared + "`") + ")");
    }
    const std::string& t = m->model_type;
    const Json* score_func = cfg.Get(Key("score_func"));
    const bool score_given = score_func != nullptr && score_func->is_string() && score_func->get<std::string>() != "auto";
    const bool has_scoring_func = t == "deepseek_v2" || t == "deepseek_v3" || t == "kimi_k2";
    const std::string model_score =
        t == "deepseek_v3" || t == "kimi_k2" || t == "glm4_moe" || m->family == ModelFamily::kLlama4 ? "sigmoid" : "softmax";
    const std::string preset_score = name == "deepseek_v3" ? "sigmoid" : "softmax";
    if (!score_given && !has_scoring_func && preset_score != model_score) {
      changes.push_back("the router scores experts with " + preset_score + ", where the model was trained with " +
                        model_score);
    }
    const bool model_renorm = m->norm_topk_prob || t == "mixtral";
    if (name == "deepseek_v2" && IsNull(cfg.Get(Key("route_norm"))) && model_renorm) {
      changes.push_back("the top-k weights are not renormalised (deepseek_v2's preset keeps its own route_norm "
                        "false), where the model renormalises them");
    }
    if (!changes.empty()) {
      ctx.Report("ep-preset-other-model", Key("preset_model"),
                 "preset_model '" + name + "' is not this " + m->model_type +
                     " model's preset, and DeepSpeed applies it without checking the model type: " +
                     JoinList(changes, "; "),
                 "use the model's own preset, or drop preset_model so AutoEP detects it");
    }
  }
  int64_t first = 0;
  while (first < m->num_hidden_layers && !m->IsMoeLayer(first)) ++first;
  // As ep_parser names the block it detected: every preset matches model.layers.N.mlp, which is
  // Mixtral's block too under transformers 5 (the presets' min_transformers_version).
  const std::string layer = "model.layers." + std::to_string(first) + ".mlp";
  const int64_t n = m->num_experts;
  std::string fits;
  if (f.world && f.pp >= 1 && *f.world % f.pp == 0) {
    std::vector<std::string> both;
    for (int64_t d = 1; d <= n; ++d) {
      if (n % d == 0 && (*f.world / f.pp) % d == 0) both.push_back(std::to_string(d));
    }
    fits = "; values that also divide the stage size " + std::to_string(*f.world / f.pp) + ": " +
           JoinList(both, ", ");
  }
  if (f.ep && *f.ep >= 1 && *f.ep > n) {
    ctx.Report(
        "ep-experts-divisibility", f.ep_pointer(),
        "autoep_size=" + std::to_string(*f.ep) + " exceeds num_experts=" + std::to_string(n) + " in layer '" + layer +
            "'. Each rank must own at least one expert. Valid autoep_size values (divisors of " +
            std::to_string(n) + "): [" + DivisorList(n) + "]",
        "use an autoep_size that divides " + std::to_string(n) + fits);
  } else if (f.ep && *f.ep >= 1 && n % *f.ep != 0) {
    ctx.Report("ep-experts-divisibility", f.ep_pointer(),
               "num_experts=" + std::to_string(n) + " in layer '" + layer +
                   "' is not divisible by autoep_size=" + std::to_string(*f.ep) +
                   ". Suggested autoep_size values: [" + DivisorList(n) + "]",
               "use an autoep_size that divides " + std::to_string(n) + fits);
  }
  // fill_autoep_config_from_hf (auto_ep_config.py) overwrites route_scale with the model config's
  // routed_scaling_factor while routed_scaling_factor is "auto", and _resolve_route_scale
  // (auto_ep.py) then uses that: the DeepSeek-family configs always carry one.
  if (const Json* rs = cfg.Get(Key("route_scale"));
      rs != nullptr && rs->is_number() && rs->get<double>() != 1.0 && m->family == ModelFamily::kDeepSeek) {
    const Json* rsf = cfg.Get(Key("routed_scaling_factor"));
    if (rsf == nullptr || (rsf->is_string() && rsf->get<std::string>() == "auto")) {
      ctx.Report("ep-route-scale-ignored", Key("route_scale"),
                 "route_scale=" + ShowValue(*rs) + " is ignored: this " + m->model_type +
                     " config has a routed_scaling_factor, which AutoEP copies over route_scale while "
                     "expert_parallel.routed_scaling_factor is \"auto\"",
                 "set expert_parallel.routed_scaling_factor to the scale you want instead");
    }
  }
  // ep_parser takes an int top_k over the model's and raises when it exceeds the experts.
  // The raw value: DeepSpeed does not coerce 16.0 (parse_autoep_config keeps it, isinstance fails).
  if (const Json* top_k = ctx.raw().Get(Key("top_k")); top_k != nullptr && !top_k->is_number_float()) {
    if (std::optional<int64_t> k = autoep::PyInt(*top_k); k && *k > n) {
      ctx.Report("ep-top-k-exceeds-experts", Key("top_k"),
                 "top_k=" + std::to_string(*k) + " exceeds num_experts=" + std::to_string(n) +
                     " in layer '" + layer + "': AutoEP's detection raises ValueError",
                 "use a top_k up to " + std::to_string(n) + ", or drop it to take the model's (" +
                     std::to_string(m->num_experts_per_tok) + ")");
    }
  }
  // validate_autoep_post_detection checks the counts after fill_autoep_config_from_hf has filled
  // the ones the config leaves null from the model config's n_group and topk_group
  // (auto_ep_config.py; the DeepSeek-V3 adapter's resolve_group_routing does the same): the
  // DeepSeek-family configs (DeepSeek-V2/V3, Kimi K2, GLM-4.5) carry them, the others do not. The
  // checks on the config's own values (>= 1, limited <= groups) run before detection
  // (expert_parallel_fields.cc).
  const ConfigView& v = cfg;
  const Json* ne = v.Get(Key("num_expert_groups"));
  const Json* nl = v.Get(Key("num_limited_groups"));
  if ((!IsNull(ne) && !ne->is_number_integer()) || (!IsNull(nl) && !nl->is_number_integer())) return;
  const bool hf_groups = m->family == ModelFamily::kDeepSeek;
  auto count = [&](const Json* j, int64_t from_model) -> std::optional<int64_t> {
    if (!IsNull(j)) return j->get<int64_t>();
    if (hf_groups) return from_model;
    return std::nullopt;
  };
  const std::optional<int64_t> groups = count(ne, m->n_group), limited = count(nl, m->topk_group);
  auto from = [&](const Json* j, const char* hf_key) {
    return IsNull(j) ? std::string(" (from the model config's ") + hf_key + ")" : std::string();
  };
  if (limited && !groups) {
    ctx.Report("ep-group-counts", Key("num_limited_groups"),
               "num_limited_groups requires num_expert_groups to be set in layer '" + layer +
                   "' (this " + m->model_type + " config has no n_group to fill it in)",
               "set num_expert_groups as well, or remove num_limited_groups");
  }
  if (!groups || *groups < 1) return;
  const std::string groups_ptr = IsNull(ne) ? Key("num_limited_groups") : Key("num_expert_groups");
  if (n % *groups != 0) {
    ctx.Report("ep-group-counts", groups_ptr,
               "num_expert_groups (" + std::to_string(*groups) + from(ne, "n_group") +
                   ") must divide num_experts (" + std::to_string(n) + ") in layer '" + layer + "'",
               "use one of " + DivisorList(n));
  }
  // The router scores a group by its top two experts, except under deepseek_v2's preset on a
  // group_limited_greedy model (its maximum: deepseek_v2.py resolve_group_routing):
  // moe/ep_router.py _get_node_limited_routing_scores raises at the first forward when a group
  // holds one expert.
  const std::string preset_name =
      explicit_preset ? preset->get<std::string>() : (m->model_type == "deepseek_v2" ? "deepseek_v2" : "");
  const bool max_scores = preset_name == "deepseek_v2" && m->topk_method == "group_limited_greedy";
  if (n % *groups == 0 && n / *groups < 2 && !max_scores) {
    ctx.Report("ep-group-counts", groups_ptr,
               "num_expert_groups (" + std::to_string(*groups) + from(ne, "n_group") + ") leaves " +
                   std::to_string(n / *groups) + " expert per group in layer '" + layer +
                   "': AutoEP's router scores a group by its top two experts and raises ValueError "
                   "\"experts_per_group (1) must be >= 2\" at the first forward",
               "use a num_expert_groups of at most " + std::to_string(n / 2));
  }
  if (!limited) {
    ctx.Report("ep-group-counts", Key("num_expert_groups"),
               "num_limited_groups must be set when num_expert_groups is set in layer '" + layer + "'",
               "set num_limited_groups (1 up to num_expert_groups)");
  } else if (*limited > *groups && (IsNull(ne) || IsNull(nl))) {
    // Both given: the pre-detection check reports it (expert_parallel_fields.cc).
    ctx.Report("ep-group-counts", IsNull(nl) ? Key("num_expert_groups") : Key("num_limited_groups"),
               "num_limited_groups (" + std::to_string(*limited) + from(nl, "topk_group") +
                   ") must be <= num_expert_groups (" + std::to_string(*groups) +
                   from(ne, "n_group") + ") in layer '" + layer + "'",
               "route each token to at most num_expert_groups groups");
  }
}

void CheckExpertParallel(RuleContext& ctx) {
  const Json* section = ctx.view().Get(autoep::kSection);
  if (section == nullptr) return;
  if (ctx.version() < ds_release::kAutoEp) {
    const Json* enabled =
        section->is_object() && section->contains("enabled") ? &(*section)["enabled"] : nullptr;
    if (enabled != nullptr && ds_semantics::PyTruthy(*enabled)) {
      ctx.ReportKey("ep-unsupported-version", autoep::kSection,
                    "DeepSpeed " + ctx.version().ToString() + " has no AutoEP (added in " +
                        ds_release::kAutoEp.ToString() +
                        ", PR #7938): the expert_parallel section is an unknown "
                        "top-level key and is silently ignored",
                    "upgrade DeepSpeed to use AutoEP, or remove the section");
    }
    return;
  }
  if (!section->is_object() || section->empty()) return;
  CheckSection(ctx, *section);
  EpFacts f = autoep::ReadFacts(ctx);
  autoep::CheckMasterKeys(ctx, f);
  if (!f.enabled) return;
  CheckEngine(ctx, f);
  autoep::CheckFolding(ctx, f);
  autoep::CheckFields(ctx, f);
  CheckEpModel(ctx, f);
}

}  // namespace

RuleSet ExpertParallelRules() {
  RuleSet set;
  set.name = "expert_parallel";
  set.rules = {
      {"ep-unsupported-version", Severity::kWarning, "expert_parallel",
       "expert_parallel with a DeepSpeed that has no AutoEP",
       "Top-level keys are read with dict.get, so before AutoEP existed the section is silently "
       "ignored and the MoE model trains without expert parallelism.",
       "AutoEP arrived in 0.19.2 (PR #7938)."},
      {"ep-load-balance-coeff", Severity::kError, "expert_parallel", "load_balance_coeff is set",
       "parse_autoep_config raises ValueError for any non-null load_balance_coeff while the config "
       "is parsed, whether or not AutoEP is enabled (auxiliary-loss-free balancing is not "
       "supported).",
       ""},
      {"ep-enabled-not-bool", Severity::kWarning, "expert_parallel",
       "expert_parallel.enabled is not a boolean",
       "parse_autoep_config keeps the raw value and the engine tests its truthiness: 1 and "
       "\"true\" turn AutoEP on as they say (a warning), \"false\", \"no\" and \"0\" turn it on "
       "too, the opposite of what they say (an error).",
       ""},
      {"ep-disabled-settings", Severity::kWarning, "expert_parallel",
       "expert_parallel settings while AutoEP is disabled",
       "validate_autoep_config returns right after the parse-time checks when enabled is false or "
       "absent, and the engine skips AutoEP: every other key in the section is silently ignored.",
       ""},
      {"ep-autotp-unsupported", Severity::kError, "expert_parallel",
       "AutoEP with AutoTP on a DeepSpeed without folding",
       "Before the AutoEP+AutoTP folding PR, validate_autoep_config raised \"AutoEP does not "
       "currently support AutoTP (tensor_parallel.autotp_size=N)\" for autotp_size > 1.",
       "Accepted (with the folding rules) since PR #8064."},
      {"ep-folding-routing-type", Severity::kError, "expert_parallel",
       "validate_folding_routing is not a boolean",
       "validate_autoep_config's first checks (with load_balance_coeff): \"expert_parallel."
       "validate_folding_routing must be a boolean\". The engine calls it only with AutoEP "
       "enabled.",
       "The key exists since the folding release (PR #8064)."},
      {"ep-unknown-preset", Severity::kError, "expert_parallel", "an unknown AutoEP preset_model",
       "validate_autoep_config: preset_model must be a registered AutoEP preset (exact name): "
       "mixtral, qwen3_moe, qwen3_5_moe, deepseek_v2, deepseek_v3, else ValueError \"Unknown "
       "preset_model\".",
       ""},
      {"ep-invalid-choice", Severity::kError, "expert_parallel",
       "score_apply, combine_impl or score_func outside its choices",
       "score_apply in (auto, pre, post), combine_impl in (auto, weighted_sum, legacy_bmm; master adds "
       "fused_weighted_sum, PR #8326), "
       "score_func in (auto, softmax, sigmoid); anything else, null included, is a ValueError.",
       ""},
      {"ep-group-counts", Severity::kError, "expert_parallel", "group-limited routing counts",
       "validate_autoep_config: num_limited_groups >= 1, num_expert_groups >= 1, "
       "num_limited_groups "
       "<= num_expert_groups. After MoE detection (validate_autoep_post_detection, needs --model): "
       "num_limited_groups requires num_expert_groups, num_expert_groups must divide the number of "
       "experts and then requires num_limited_groups. DeepSeek configs can supply them as "
       "n_group/topk_group.",
       ""},
      {"ep-attribute-name", Severity::kError, "expert_parallel",
       "an attribute-name field is empty or dotted",
       "expert_w1/w2/w3, num_experts_attr, top_k_attr, router_pattern, expert_pattern, "
       "shared_experts_pattern and shared_experts_gate_pattern name direct child attributes: "
       "non-empty strings without '.' (expert_w3 may be null: fused gate+up).",
       ""},
      {"ep-field-type", Severity::kError, "expert_parallel",
       "has_shared_experts or routed_scaling_factor has the wrong type",
       "has_shared_experts must be a boolean when set; routed_scaling_factor a number or \"auto\".",
       ""},
      {"ep-moe-layer-pattern", Severity::kError, "expert_parallel",
       "moe_layer_pattern is not a valid Python regular expression",
       "moe_layer_pattern is a Python regular expression over module names, compiled when AutoEP "
       "detects MoE layers; an invalid one raises re.error during engine initialisation.",
       ""},
      {"ep-size-one", Severity::kWarning, "expert_parallel", "autoep_size is 1",
       "DeepSpeed warns: with autoep_size=1 (also the default) every rank owns all experts, AutoEP "
       "replaces the layers but does no all-to-all.",
       ""},
      {"ep-top-k-override", Severity::kWarning, "expert_parallel", "top_k together with top_k_attr",
       "An explicit integer top_k wins; top_k_attr is ignored (DeepSpeed warning).", ""},
      {"ep-shared-experts-pairing", Severity::kWarning, "expert_parallel",
       "shared-expert fields without their partner",
       "has_shared_experts=true needs shared_experts_pattern; the shared-expert patterns are "
       "ignored unless has_shared_experts is true (DeepSpeed warnings).",
       ""},
      {"ep-custom-fields", Severity::kNote, "expert_parallel", "custom detection fields",
       "Custom detection fields override the preset's defaults, or apply to auto-detection when "
       "neither preset_model nor moe_layer_pattern is set (DeepSpeed warning).",
       ""},
      {"ep-data-before-sequence-parallel", Severity::kError, "expert_parallel",
       "use_data_before_expert_parallelism with sequence parallelism",
       "With sequence parallelism the engine creates EP groups with mp_size > 1, and "
       "groups._create_expert_and_data_parallel raises NotImplementedError for the data-before-"
       "expert order (with AutoTP, folding rule g reports it).",
       ""},
      {"ep-zero3-unsupported", Severity::kError, "expert_parallel",
       "a feature AutoEP does not support under ZeRO-3",
       "_validate_zero3_moe_compatibility (AssertionError) when MoE layers exist under ZeRO stage "
       "3: "
       "AutoEP only, no sequence parallelism, no zero_quantized_gradients, no MiCS "
       "(mics_shard_size > 0), no hpZeRO (zero_hpz_partition_size > 1); autotp_size and "
       "expert_tensor_parallel_size are caught earlier by ep-fold-zero3 and ep-expert-tp.",
       "Before PR #8060 (same release as the folding PR) every MoE model, AutoEP included, was "
       "rejected under ZeRO-3: \"MoE not supported with Stage 3\"."},
      {"ep-experts-divisibility", Severity::kError, "expert_parallel",
       "autoep_size against the model's experts",
       "validate_autoep_post_detection, for every detected MoE layer: autoep_size <= num_experts "
       "and "
       "num_experts % autoep_size == 0 (ValueError listing the divisors).",
       ""},
      {"ep-moe-not-detected", Severity::kWarning, "expert_parallel",
       "AutoEP finds no MoE layer in the model's layout",
       "Every built-in AutoEP preset detects modules named model.layers.N.mlp with a 'gate' router "
       "and an 'experts' child (module_inject/auto_ep_presets). gpt_oss's router is mlp.router, "
       "llama4's MoE block is feed_forward and Qwen3-VL-MoE's blocks are "
       "model.language_model.layers.N.mlp, so without moe_layer_pattern/router_pattern "
       "AutoEP only logs \"no MoE layers detected in model.\" (auto_ep.py) and the run has no "
       "expert parallelism.",
       ""},
      {"ep-route-scale-ignored", Severity::kWarning, "expert_parallel",
       "route_scale on a model whose config sets routed_scaling_factor",
       "fill_autoep_config_from_hf (auto_ep_config.py) copies the model config's "
       "routed_scaling_factor over route_scale while expert_parallel.routed_scaling_factor is "
       "\"auto\" (DeepSeek-V2/V3, Kimi K2 and GLM-4.5 configs carry one), so the route_scale "
       "given is replaced: _resolve_route_scale logs it only when the model's factor is not 1.0, "
       "so on DeepSeek-V2-Lite or GLM-4.5-Air (1.0) silently.",
       ""},
      {"ep-top-k-exceeds-experts", Severity::kError, "expert_parallel",
       "top_k above the model's expert count",
       "AutoEP.ep_parser (auto_ep.py) takes an int expert_parallel.top_k over the model config's "
       "and raises ValueError \"top_k=K exceeds num_experts=E\" for every detected layer.",
       ""},
      {"ep-zero-moe-settings", Severity::kError, "expert_parallel",
       "ZeRO stage 1/2 settings the MoE path asserts on",
       "With MoE layers (AutoEP's included) the ZeRO stage 1/2 optimizer asserts reduce_scatter "
       "and, at stage 2, contiguous_gradients (forced on with the optimizer offloaded to any device); at "
       "stage 1 contiguous_gradients off is only a warning (stage_1_and_2.py "
       "_configure_moe_settings). Stage 1 with bf16 and fp32 accumulation runs BF16_Optimizer and "
       "is not checked.",
       ""},
      {"ep-detection-ambiguous", Severity::kError, "expert_parallel",
       "AutoEP auto-detection on a model every preset matches",
       "Without preset_model or moe_layer_pattern, a model_type that no preset lists in its "
       "hf_model_types is tried against every preset (auto_ep_presets/registry.py "
       "resolve_preset_candidates). All five share model.layers.N.mlp, `gate` and `experts`, so "
       "a model built that way (transformers 5's glm4_moe and qwen3_next, and gpt_oss once a "
       "router_pattern names its `router`) is matched five times "
       "and ep_parser raises ValueError \"AutoEP detection is ambiguous\" (auto_ep.py "
       "_raise_if_duplicate_moe_specs).",
       ""},
      {"ep-preset-no-moe", Severity::kError, "expert_parallel",
       "an explicit AutoEP preset that matches no MoE layer of the model",
       "With expert_parallel.preset_model set, a model in which the preset detects no MoE layer "
       "is a ValueError \"AutoEP: no MoE layers detected for ...\" (auto_ep.py).",
       ""},
      {"ep-preset-other-model", Severity::kWarning, "expert_parallel",
       "an AutoEP preset written for another model family",
       "resolve_preset_candidates (auto_ep_presets/registry.py) uses an explicit preset_model "
       "first, without comparing the preset's hf_model_types with the model's type, and every "
       "preset shares the same module patterns. ep_parser (auto_ep.py) still takes scoring_func, "
       "norm_topk_prob and the group counts from the model config, and the config's overrides "
       "apply, so what changes is reported: shared experts under another name than the preset's "
       "(shared_expert for the Qwen presets, shared_experts for DeepSeek's, none for mixtral) are "
       "left out of the replacement block, a model without scoring_func is scored with the "
       "preset's function (sigmoid for deepseek_v3, softmax for the others), and deepseek_v2's "
       "preset does not renormalise the top-k weights whatever norm_topk_prob says.",
       ""},
      {"ep-dense-model", Severity::kWarning, "expert_parallel",
       "AutoEP on a model without MoE layers",
       "AutoEP finds no MoE layer to replace and does nothing; no error is raised.", ""},
  };
  for (const auto& info : autoep::FoldingRuleInfos()) set.rules.push_back(info);
  for (const auto& info : autoep::MasterKeyRuleInfos()) set.rules.push_back(info);
  set.check = CheckExpertParallel;
  return set;
}

}  // namespace dsp
