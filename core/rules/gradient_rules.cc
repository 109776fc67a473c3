// SPDX-License-Identifier: Apache-2.0
// Gradient reduction and clipping : gradient_allreduce_op
// (runtime/config.py get_gradient_allreduce_op and _do_error_check), gradient_clipping and its
// default, and the optimizer-level max_grad_norm that DeepSpeed refuses (engine.py
// _configure_basic_optimizer).
#include <string>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"

namespace dsp {
namespace {

using namespace ds_semantics;

constexpr const char* kOp = "/gradient_allreduce_op";

// Python repr() of the value get_gradient_allreduce_op complains about.
// repr() of the value DeepSpeed lower-cases before comparing it.
std::string LoweredPyRepr(const Json& v) {
  if (v.is_string()) return "'" + Lower(v.get<std::string>()) + "'";
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  return v.dump();
}

void CheckAllreduceOp(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* op = v.Get(kOp);
  if (op == nullptr) return;
  if (ctx.version() < ds_history::kGradientAllreduceOp) {
    ctx.ReportKey("gradient-allreduce-op-unavailable", kOp,
                  "gradient_allreduce_op does not exist in DeepSpeed " + ctx.version().ToString() +
                      ": it arrived in " + ds_history::kGradientAllreduceOp.ToString() +
                      " (PR #8232), and older releases ignore the unknown top-level key, so "
                      "gradients are always averaged",
                  "remove the key, or target DeepSpeed >= " +
                      ds_history::kGradientAllreduceOp.ToString() + " (--deepspeed-version)");
    return;
  }
  std::string value = op->is_string() ? Lower(op->get<std::string>()) : "";
  if (value != "mean" && value != "sum") {
    ctx.Report("gradient-allreduce-op-invalid", kOp,
               "gradient_allreduce_op is " + ShowValue(*op) +
                   ": DeepSpeed raises \"Invalid gradient_allreduce_op. Supported operations: "
                   "['mean', 'sum']. Got: " + LoweredPyRepr(*op) + "\"",
               "use \"mean\" (the default: average over data-parallel ranks) or \"sum\"");
    return;
  }
  if (value != "sum") return;

  // _do_error_check, in DeepSpeed's order.
  auto stage = EffectiveZeroStage(ctx);
  const Json* zenflow = v.Get("/zero_optimization/zenflow");
  bool has_zenflow = zenflow != nullptr && !zenflow->is_null() &&
                     !(zenflow->is_string() && zenflow->get_ref<const std::string&>() == "auto");
  bool deepcompile = PydanticBool(v, "/compile/deepcompile", false).value_or(false);
  struct Conflict {
    bool on;
    const char* with;
    const char* fix;
  };
  for (const Conflict& c :
       {Conflict{stage && *stage == 3, "ZeRO stage 3", "use ZeRO stage 1 or 2"},
        Conflict{has_zenflow, "ZenFlow", "remove zero_optimization.zenflow"},
        Conflict{deepcompile, "DeepCompile", "set compile.deepcompile to false"}}) {
    if (!c.on) continue;
    ctx.Report("gradient-allreduce-sum-unsupported", kOp,
               std::string("gradient_allreduce_op is \"sum\" together with ") + c.with +
                   ": DeepSpeed raises \"gradient_allreduce_op='sum' is not supported with " +
                   c.with + "\"",
               std::string("use \"mean\" (scale the loss or learning rate instead), or ") + c.fix);
  }
}

void CheckClipping(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* clip = v.Get("/gradient_clipping");
  const DeepSpeedVersion& version = ctx.version();
  if (clip == nullptr) {
    bool new_default = version >= ds_release::kGradientClippingDefault;
    std::string since = ds_release::kGradientClippingDefault.ToString();
    ctx.Report("gradient-clipping-default", "/gradient_clipping",
               new_default
                   ? "gradient_clipping is not set: DeepSpeed " + version.ToString() +
                         " clips the global gradient norm to 1.0 by default (the default was 0.0, "
                         "no clipping, before " + since + ")"
                   : "gradient_clipping is not set: DeepSpeed " + version.ToString() +
                         " does not clip gradients (default 0.0); from " + since +
                         " the default is 1.0, so upgrading DeepSpeed starts clipping at norm 1.0",
               "set gradient_clipping explicitly (for example 1.0, or 0.0 to disable clipping) so "
               "training does not change with the DeepSpeed release");
    return;
  }
  auto value = v.Number("/gradient_clipping");
  if (value.present() && value.value < 0) {
    ctx.Report("gradient-clipping-negative", value.pointer,
               "gradient_clipping is " + ShowValue(*clip) +
                   ": DeepSpeed does not validate it and clips only when it is > 0, so a negative "
                   "value silently disables clipping",
               "use a positive max norm such as 1.0, or 0.0 to disable clipping explicitly");
  }
}

void CheckMaxGradNorm(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* type = v.Get("/optimizer/type");
  const Json* norm = v.Get("/optimizer/params/max_grad_norm");
  // Only an optimizer DeepSpeed builds from the config (optimizer.type set) reads params.
  if (type == nullptr || type->is_null() || norm == nullptr) return;
  ctx.ReportIf(Condition::kDeepSpeedBuildsOptimizer, "optimizer-max-grad-norm", "/optimizer/params/max_grad_norm",
             "optimizer.params.max_grad_norm: DeepSpeed raises \"'max_grad_norm' is not supported "
             "as an optimizer parameter, please switch to using the deepspeed parameter "
             "'gradient_clipping'\" when it builds the optimizer",
             "move the value to the top level: \"gradient_clipping\": " + ShowValue(*norm) +
                 ", and remove max_grad_norm from optimizer.params");
}

}  // namespace

RuleSet GradientRules() {
  RuleSet set;
  set.name = "gradient";
  set.rules = {
      {"gradient-allreduce-op-invalid", Severity::kError, "gradient",
       "gradient_allreduce_op is not mean or sum",
       "get_gradient_allreduce_op lower-cases a string value and accepts \"mean\" (default: "
       "divide by the data-parallel size) or \"sum\"; anything else, null included, raises "
       "ValueError while the config is read.",
       "Added in 0.19.6 (PR #8232)."},
      {"gradient-allreduce-op-unavailable", Severity::kWarning, "gradient",
       "gradient_allreduce_op on a DeepSpeed release without it",
       "Before the key existed, DeepSpeed ignores it (top-level keys are read with dict.get) and "
       "always averages gradients over the data-parallel group.",
       "0.19.6 (PR #8232) added gradient_allreduce_op."},
      {"gradient-allreduce-sum-unsupported", Severity::kError, "gradient",
       "gradient_allreduce_op \"sum\" with ZeRO-3, ZenFlow or DeepCompile",
       "DeepSpeedConfig._do_error_check raises ValueError for \"sum\" together with ZeRO stage 3, "
       "a zero_optimization.zenflow section, or compile.deepcompile.",
       ""},
      {"optimizer-max-grad-norm", Severity::kError, "gradient",
       "optimizer.params.max_grad_norm",
       "When DeepSpeed builds the optimizer from the config, _configure_basic_optimizer "
       "(runtime/engine.py, 0.19.6) raises ValueError if optimizer.params contains max_grad_norm "
       "(any value, 0 included): clipping is configured with the top-level gradient_clipping. With a "
       "client optimizer (Megatron-DeepSpeed) the section is ignored, so without --consumer this "
       "is a warning.",
       ""},
      {"gradient-clipping-default", Severity::kNote, "gradient",
       "gradient_clipping not set: the default depends on the DeepSpeed release",
       "GRADIENT_CLIPPING_DEFAULT is 1.0 from 0.19.3 (0.0, meaning no clipping, before), so the "
       "same config clips on new releases and not on old ones. The note says which applies to "
       "the targeted release (--deepspeed-version).",
       "0.19.3 (PR #8068) changed the default from 0.0 to 1.0."},
      {"gradient-clipping-negative", Severity::kWarning, "gradient", "negative gradient_clipping",
       "gradient_clipping has no range validation; the engine and the ZeRO/fp16/bf16 optimizers "
       "clip only when it is > 0, so a negative value silently disables clipping.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckAllreduceOp(ctx);
    CheckClipping(ctx);
    CheckMaxGradNorm(ctx);
  };
  return set;
}

}  // namespace dsp
