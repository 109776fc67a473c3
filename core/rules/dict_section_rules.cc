// SPDX-License-Identifier: Apache-2.0
// Sections DeepSpeed reads as plain dicts with a getter that pops "enabled" without a default
// (runtime/config.py get_amp_params, get_pld_params; runtime/data_pipeline/config.py
// get_curriculum_params_legacy, 0.19.6): a section without "enabled" is a KeyError while the config
// is read, whatever else it holds. Their flags are tested for Python truthiness.
#include "core/rules/ds_semantics.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

struct PoppedSection {
  const char* key;
  const char* getter;
};

void Check(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  for (PoppedSection s : {PoppedSection{"amp", "get_amp_params"}, PoppedSection{"progressive_layer_drop", "get_pld_params"},
                          PoppedSection{"curriculum_learning", "get_curriculum_params_legacy"}}) {
    const std::string ptr = std::string("/") + s.key;
    const Json* section = v.Get(ptr);
    if (section == nullptr || !section->is_object()) continue;
    if (!section->contains("enabled")) {
      ctx.Report("section-missing-enabled", ptr,
                 std::string("the \"") + s.key + "\" section has no \"enabled\" key: DeepSpeed's " + s.getter +
                     " pops it without a default and raises KeyError: 'enabled' while it reads the config",
                 std::string("add \"enabled\": true (or false), or remove the section"));
      continue;
    }
    const Json& enabled = (*section)["enabled"];
    if (enabled.is_string()) {
      ctx.Report("section-enabled-string", ptr + "/enabled",
                 std::string(s.key) + ".enabled is the string " + ShowValue(enabled) +
                     ": DeepSpeed tests it for Python truthiness, so any non-empty string (\"false\" included) turns " +
                     s.key + " on",
                 "write true or false without quotes");
    }
  }
  // engine.py pld_theta / pld_gamma index the params: the documented defaults are never used.
  if (DictFlag(v, "/progressive_layer_drop/enabled")) {
    for (const char* key : {"theta", "gamma"}) {
      if (v.Get(std::string("/progressive_layer_drop/") + key) != nullptr) continue;
      ctx.Report("section-missing-enabled", "/progressive_layer_drop",
                 std::string("progressive_layer_drop is enabled without \"") + key + "\": the engine reads pld_params()['" +
                     key + "'] and raises KeyError: '" + key + "' when it starts (the defaults in constants.py are not used)",
                 std::string("add \"") + key + "\" (DeepSpeed's documented default is " + (key[0] == 't' ? "1.0" : "0.001") + ")");
    }
  }
}

}  // namespace

RuleSet DictSectionRules() {
  RuleSet set;
  set.name = "dict-sections";
  set.rules = {
      {"section-missing-enabled", Severity::kError, "sections",
       "amp, progressive_layer_drop or curriculum_learning without a key DeepSpeed indexes",
       "get_amp_params and get_pld_params (runtime/config.py) and get_curriculum_params_legacy "
       "(runtime/data_pipeline/config.py) do params.pop(\"enabled\") without a default, so a section "
       "without \"enabled\" raises KeyError while DeepSpeed reads the config, even when nothing in it "
       "is meant to be on. An enabled progressive_layer_drop also needs theta and gamma: "
       "engine.py pld_theta/pld_gamma index them directly.",
       ""},
      {"section-enabled-string", Severity::kWarning, "sections",
       "a dict-parsed enabled flag written as a string",
       "amp, progressive_layer_drop and curriculum_learning are read with dict.get and Python "
       "truthiness: \"false\" is a non-empty string, so the feature is on.",
       ""},
  };
  set.check = Check;
  return set;
}

}  // namespace dsp
