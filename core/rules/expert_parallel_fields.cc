// SPDX-License-Identifier: Apache-2.0
// expert_parallel keys validate_autoep_config checks one by one (module_inject/auto_ep_config.py): the preset name, the enums, group-limited routing counts, attribute names, field types,
// and DeepSpeed's own warnings about the section.
#include <algorithm>
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/expert_parallel_internal.h"
#include "core/rules/python_regex.h"
#include "core/util/text.h"

namespace dsp::autoep {
namespace {

using ds_semantics::ShowValue;

const std::vector<std::string>& EpPresets() {
  static const std::vector<std::string> names = {"mixtral", "qwen3_moe", "qwen3_5_moe",
                                                 "deepseek_v2", "deepseek_v3"};
  return names;
}

// 'a', 'b', 'c': the items as Python prints a list or tuple of strings.
std::string Quoted(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "'" : ", '") + i + "'";
  return out;
}

}  // namespace

void CheckFields(RuleContext& ctx, const EpFacts& f) {
  const ConfigView& v = ctx.view();
  if (const Json* p = v.Get(Key("preset_model")); !IsNull(p)) {
    const auto& names = EpPresets();
    bool known = p->is_string() &&
                 std::find(names.begin(), names.end(), p->get<std::string>()) != names.end();
    if (!known) {
      std::string name = p->is_string() ? p->get<std::string>() : p->dump();
      std::string close = ClosestMatch(name, names);
      std::string tp_note;
      for (const char* tp : {"llama", "bloom", "chatglm", "qwen2", "phi3"}) {
        if (ds_semantics::Lower(name) == tp)
          tp_note = " (\"" + name + "\" is an AutoTP preset: tensor_parallel.preset_model)";
      }
      ctx.Report("ep-unknown-preset", Key("preset_model"),
                 "Unknown preset_model '" + name + "'" + tp_note + ". Available presets: [" +
                     Quoted(names) +
                     "]: validate_autoep_config raises ValueError (the name is "
                     "case-sensitive)",
                 close.empty() ? "use one of " + JoinList(names, ", ")
                               : "did you mean \"" + close + "\"?");
    }
  }
  struct Choice {
    const char* key;
    std::vector<std::string> values;
  };
  // PR #8326 (master) adds fused_weighted_sum to combine_impl's Literal.
  std::vector<std::string> combine = {"auto", "weighted_sum", "legacy_bmm"};
  if (ctx.version() >= ds_release::kAutoEpFusedCombine) combine.insert(combine.begin() + 2, "fused_weighted_sum");
  for (const Choice& c : {Choice{"score_apply", {"auto", "pre", "post"}}, Choice{"combine_impl", combine},
                          Choice{"score_func", {"auto", "softmax", "sigmoid"}}}) {
    const Json* j = v.Get(Key(c.key));
    if (j == nullptr) continue;
    bool ok = j->is_string() &&
              std::find(c.values.begin(), c.values.end(), j->get<std::string>()) != c.values.end();
    if (ok) continue;
    ctx.Report("ep-invalid-choice", Key(c.key),
               std::string(c.key) + " must be one of (" + Quoted(c.values) + "), got " +
                   (j->is_string() ? "'" + j->get<std::string>() + "'" : ShowValue(*j)) +
                   ": validate_autoep_config raises ValueError",
               "use one of " + JoinList(c.values, " or "));
  }

  // Group-limited routing.
  auto number = [&](const char* key) -> std::optional<double> {
    const Json* j = v.Get(Key(key));
    if (IsNull(j)) return std::nullopt;
    if (j->is_number() || j->is_boolean())
      return j->is_boolean() ? double(j->get<bool>()) : j->get<double>();
    ctx.Report("ep-group-counts", Key(key),
               std::string(key) + " is " + ShowValue(*j) +
                   ": DeepSpeed compares it with integers and "
                   "fails with TypeError",
               "write an integer");
    return std::nullopt;
  };
  auto limited = number("num_limited_groups");
  auto expert = number("num_expert_groups");
  auto num = [](double d) {
    return ShowValue(Json(d == static_cast<int64_t>(d) ? Json(int64_t(d)) : Json(d)));
  };
  if (limited && *limited < 1) {
    ctx.Report("ep-group-counts", Key("num_limited_groups"),
               "num_limited_groups must be >= 1, got " + num(*limited),
               "use 1 up to num_expert_groups");
  }
  if (expert && *expert < 1) {
    ctx.Report("ep-group-counts", Key("num_expert_groups"),
               "num_expert_groups must be >= 1, got " + num(*expert),
               "use a divisor of the number of experts");
  } else if (expert && limited && *limited > *expert) {
    ctx.Report("ep-group-counts", Key("num_limited_groups"),
               "num_limited_groups (" + num(*limited) + ") must be <= num_expert_groups (" +
                   num(*expert) + ")",
               "route each token to at most num_expert_groups groups");
  }

  // Attribute names (direct children, not dotted paths or regexes).
  for (const char* key :
       {"expert_w1", "expert_w2", "expert_w3", "num_experts_attr", "top_k_attr", "router_pattern",
        "expert_pattern", "shared_experts_pattern", "shared_experts_gate_pattern"}) {
    const Json* j = v.Get(Key(key));
    if (IsNull(j)) continue;
    if (!j->is_string() || j->get<std::string>().empty()) {
      ctx.Report("ep-attribute-name", Key(key),
                 std::string(key) + " must be a non-empty string (got " + ShowValue(*j) + ")",
                 "write the attribute name, or null for the preset default");
    } else if (j->get<std::string>().find('.') != std::string::npos) {
      ctx.Report(
          "ep-attribute-name", Key(key),
          std::string(key) + " must be a direct attribute name (no dots), got " + ShowValue(*j),
          "name the child attribute only (e.g. \"experts\", \"gate\"), not a dotted path or a "
          "regex");
    }
  }
  if (const Json* j = v.Get(Key("has_shared_experts")); !IsNull(j) && !j->is_boolean()) {
    ctx.Report("ep-field-type", Key("has_shared_experts"),
               "has_shared_experts must be a boolean when set (got " + ShowValue(*j) + ")",
               "write true or false");
  }
  if (const Json* j = v.Get(Key("routed_scaling_factor"));
      j != nullptr && !(j->is_string() && j->get<std::string>() == "auto") && !j->is_number() &&
      !j->is_boolean()) {
    ctx.Report("ep-field-type", Key("routed_scaling_factor"),
               "routed_scaling_factor must be a number or 'auto' (got " + ShowValue(*j) + ")",
               "write a number such as 2.5, or \"auto\" to read it from the model config");
  }
  if (const Json* j = v.Get(Key("validate_folding_routing"));
      f.folding_release && j != nullptr && !j->is_boolean()) {
    ctx.Report("ep-folding-routing-type", Key("validate_folding_routing"),
               "expert_parallel.validate_folding_routing must be a boolean (got " + ShowValue(*j) +
                   "): validate_autoep_config raises ValueError",
               "write true or false");
  }
  if (const Json* j = v.Get(Key("moe_layer_pattern")); j != nullptr && j->is_string()) {
    PythonRegex re = CompilePythonRegex(j->get<std::string>());
    if (!re.error.empty()) {
      ctx.Report("ep-moe-layer-pattern", Key("moe_layer_pattern"),
                 "moe_layer_pattern \"" + re.source +
                     "\" is not a valid Python regular expression (" + re.error +
                     "): re.error is raised when AutoEP looks for MoE layers",
                 "fix the regular expression; it is matched against module names such as "
                 "model.layers.0.mlp");
    }
  }

  // DeepSpeed's warnings.
  if (f.ep && *f.ep == 1 && f.tp <= 1) {
    ctx.Report("ep-size-one", f.ep_pointer(),
               std::string(f.ep_given ? "autoep_size=1"
                                      : "autoep_size is absent and defaults to 1, which") +
                   " means every rank owns all experts with no AllToAll: AutoEP replaces the MoE "
                   "layers but "
                   "does no expert parallelism",
               f.world ? "set autoep_size to a divisor of the world size above 1 (" +
                             DivisorList(*f.world) + ")"
                       : std::string("set autoep_size above 1"));
  }
  const Json* top_k = v.Get(Key("top_k"));
  if (top_k != nullptr && autoep::PyInt(*top_k) && !IsNull(v.Get(Key("top_k_attr")))) {
    ctx.Report("ep-top-k-override", Key("top_k_attr"),
               "top_k is explicitly set (" + ShowValue(*top_k) + "); top_k_attr will be ignored",
               "remove one of them");
  }
  const Json* hse = v.Get(Key("has_shared_experts"));
  const bool shared_on = hse != nullptr && *hse == Json(true);
  const Json* sep = v.Get(Key("shared_experts_pattern"));
  const bool sep_set = sep != nullptr && ds_semantics::PyTruthy(*sep);
  if (shared_on && !sep_set) {
    ctx.Report(
        "ep-shared-experts-pairing", Key("has_shared_experts"),
        "has_shared_experts=True but shared_experts_pattern is not set: shared expert detection "
        "requires both fields",
        "add shared_experts_pattern (the shared-expert child attribute, e.g. \"shared_expert\")");
  }
  for (const char* key : {"shared_experts_pattern", "shared_experts_gate_pattern"}) {
    const Json* j = v.Get(Key(key));
    if (j != nullptr && ds_semantics::PyTruthy(*j) && !shared_on) {
      ctx.Report("ep-shared-experts-pairing", Key(key),
                 std::string(key) + "=" + ShowValue(*j) +
                     " is set but has_shared_experts is not True: the "
                     "pattern will be ignored",
                 "set has_shared_experts to true, or remove the pattern");
    }
  }
  std::vector<std::string> custom;
  for (const char* key : {"moe_layer_pattern", "router_pattern", "expert_pattern", "expert_w1",
                          "expert_w2", "num_experts_attr", "top_k_attr", "has_shared_experts",
                          "shared_experts_pattern", "shared_experts_gate_pattern"}) {
    if (!IsNull(v.Get(Key(key)))) custom.push_back(key);
  }
  if (v.Has(Key("expert_w3"))) custom.push_back("expert_w3");
  const Json* preset = v.Get(Key("preset_model"));
  if (!custom.empty() && (!IsNull(preset) || IsNull(v.Get(Key("moe_layer_pattern"))))) {
    ctx.Report(
        "ep-custom-fields", IsNull(preset) ? kSection : Key("preset_model"),
        "custom preset fields " + JoinList(custom, ", ") +
            (IsNull(preset)
                 ? " are set without preset_model or moe_layer_pattern: the overrides apply to "
                   "auto-detected presets or to trying every preset"
                 : " are set alongside preset_model=" + ShowValue(*preset) +
                       ": they override the preset's defaults during detection"),
        "");
  }
}

}  // namespace dsp::autoep
