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

// MoQ, the weight quantization of compression_training (read as a dict by runtime/config.py
// get_quantize_enabled / get_weight_quantization): engine.py _configure_quantization asserts fp16 when
// the weights are quantized in the optimizer step (quantize_weight_in_forward false, the default), and
// get_weight_quantization asserts different_groups when it is enabled.
void CheckMoq(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const std::string shared = "/compression_training/weight_quantization/shared_parameters";
  if (!DictFlag(v, shared + "/enabled")) return;
  if (v.Get("/compression_training/weight_quantization/different_groups") == nullptr) {
    ctx.Report("moq-config", "/compression_training/weight_quantization",
               "weight quantization is enabled without different_groups: get_weight_quantization asserts "
               "\"Weigh Quantization is enabled, different_groups must be specified\" while DeepSpeed reads the config",
               "add \"different_groups\" naming the modules and their bits");
  }
  if (DictFlag(v, shared + "/quantize_weight_in_forward") || Fp16Enabled(v)) return;
  // fp16.enabled written as a template placeholder: whatever fills it decides.
  const Json* fp16 = v.Get("/fp16/enabled");
  if (fp16 != nullptr && !fp16->is_boolean()) return;
  // With neither precision section the file leaves precision to whoever launches it (a script may
  // add fp16 before deepspeed.initialize): a warning; fp16 off or bf16 on is the assert for sure.
  const bool decided = fp16 != nullptr || v.Get("/bf16") != nullptr || v.Get("/bfloat16") != nullptr;
  ctx.ReportAs(decided ? Severity::kError : Severity::kWarning, "moq-config", shared + "/enabled",
               "MoQ quantizes the weights in the optimizer step (quantize_weight_in_forward is false) without fp16: "
               "engine.py _configure_quantization asserts \"MoQ (quantize in optimization step) weight quantization "
               "is only supported for FP16\" (an assert: python -O skips it)" +
                   std::string(decided ? "" : "; the file sets no precision, so this holds unless the script enables fp16"),
               "enable fp16, or set quantize_weight_in_forward to true");
}

// elasticity, read as a dict by elasticity/config.py ElasticityConfig.__init__ when enabled (types
// and ranges are the schema's): max_train_batch_size and micro_batch_sizes are required, and
// max_gpus may not be below min_gpus; each raises ElasticityConfigError while DeepSpeed reads the config.
void CheckElasticity(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  if (!DictFlag(v, "/elasticity/enabled")) return;
  for (const char* key : {"max_train_batch_size", "micro_batch_sizes"}) {
    if (v.Get(std::string("/elasticity/") + key) != nullptr) continue;
    ctx.Report("elasticity-config", "/elasticity",
               std::string("elasticity is enabled without ") + key +
                   ": ElasticityConfig raises ElasticityConfigError(\"Elasticity config missing " + key + "\")",
               std::string("add \"") + key + "\"");
  }
  auto min_gpus = v.Int("/elasticity/min_gpus"), max_gpus = v.Int("/elasticity/max_gpus");
  const int64_t lo = min_gpus.or_default(1), hi = max_gpus.or_default(10000);  // elasticity/constants.py defaults
  if ((min_gpus.present() || max_gpus.present()) && lo >= 1 && hi >= 1 && hi < lo) {
    ctx.Report("elasticity-config", max_gpus.present() ? max_gpus.pointer : min_gpus.pointer,
               "elasticity max_gpus " + std::to_string(hi) + " is below min_gpus " + std::to_string(lo) +
                   ": ElasticityConfig raises ElasticityConfigError(\"Elasticity min_gpus cannot be greater than "
                   "max_gpus ...\")",
               "make max_gpus at least min_gpus");
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
  set.rules.push_back(
      {"moq-config", Severity::kError, "sections", "compression_training's weight quantization (MoQ) as DeepSpeed builds it",
       "runtime/config.py get_weight_quantization asserts different_groups when weight quantization is enabled; "
       "engine.py _configure_quantization asserts fp16 when the weights are quantized in the optimizer step "
       "(quantize_weight_in_forward false, its default).",
       ""});
  set.rules.push_back(
      {"elasticity-config", Severity::kError, "sections", "elasticity's own checks when enabled",
       "elasticity/config.py ElasticityConfig.__init__ (built when elasticity is enabled) requires "
       "max_train_batch_size and micro_batch_sizes and raises ElasticityConfigError when max_gpus is below "
       "min_gpus; the list, positivity and range checks are the schema's.",
       ""});
  set.check = [](RuleContext& ctx) {
    Check(ctx);
    CheckMoq(ctx);
    CheckElasticity(ctx);
  };
  return set;
}

}  // namespace dsp
