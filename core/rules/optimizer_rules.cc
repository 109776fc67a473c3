// SPDX-License-Identifier: Apache-2.0
// The optimizer section as DeepSpeed 0.19.6 builds it (runtime/engine.py _do_sanity_check,
// _configure_basic_optimizer, _do_optimizer_sanity_check): the type must name an optimizer,
// optimizer.params are the constructor's keyword arguments, ZeRO needs a tested optimizer or
// zero_allow_untested_optimizer, and Lamb needs dynamic loss scaling. All of it happens only when
// DeepSpeed builds the optimizer from this section (Condition::kDeepSpeedBuildsOptimizer): a script
// that passes its own optimizer (Megatron-DeepSpeed) never reaches these checks.
#include <cmath>

#include "core/rules/ds_semantics.h"
#include "core/rules/optimizer_catalog.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

using namespace ds_semantics;
constexpr Condition kBuildsOptimizer = Condition::kDeepSpeedBuildsOptimizer;

std::string ClassText(const OptimizerChoice& c) {
  std::string s = std::string(c.cls->name) + " (" + std::string(c.cls->source) + ")";
  if (!c.why.empty()) s += " because " + c.why;
  return s;
}

void CheckType(RuleContext& ctx, const std::string& type, const OptimizerChoice& choice) {
  if (choice.known) return;
  std::string guess = ClosestMatch(type, KnownOptimizerNames());
  // torch names are matched exactly: "sgd" is not torch.optim.SGD (torch/optim/__init__.py deletes
  // its lower-case module names, so getattr finds nothing).
  for (const auto& n : KnownOptimizerNames()) {
    if (Lower(n) == Lower(type)) guess = n;
  }
  ctx.ReportIf(kBuildsOptimizer, "optimizer-type-unknown", "/optimizer/type",
               "optimizer type \"" + type + "\" is neither a DeepSpeed optimizer nor a torch.optim class: "
               "DeepSpeed asserts \"" + type + " is not a supported DeepSpeed Optimizer\"",
               guess.empty() ? "use one of Adam, AdamW, Lamb, Lion, Adagrad, OneBitAdam, ZeroOneAdam, "
                               "OneBitLamb, Muon, MuAdam, MuAdamW, MuSGD, or a torch.optim class such as SGD"
                             : "did you mean \"" + guess + "\"?" +
                                   (Lower(guess) == Lower(type) ? " (torch.optim names are case-sensitive)" : ""));
}

void CheckParams(RuleContext& ctx, const OptimizerChoice& choice, const Json& params) {
  const OptimizerClass& cls = *choice.cls;
  std::vector<std::string> accepted;
  for (auto p : cls.params) accepted.emplace_back(p);
  for (auto p : choice.popped) accepted.emplace_back(p);
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string& key = it.key();
    std::string pointer = PointerJoin("/optimizer/params", key);
    if (key == "max_grad_norm") continue;  // optimizer-max-grad-norm
    if (Contains(cls.params, key) || Contains(choice.popped, key)) continue;
    if (key == "params" || Contains(cls.passed_by_deepspeed, key)) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-unknown", pointer,
                   "optimizer.params." + key + ": DeepSpeed itself passes " +
                       (key == "params" ? std::string("the model's parameters") : "\"" + key + "\"") +
                       " to " + ClassText(choice) + ", so the call raises TypeError (got multiple values for '" +
                       key + "')",
                   "remove optimizer.params." + key);
      continue;
    }
    if (cls.ignores_unknown) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-ignored", pointer,
                   "optimizer.params." + key + " is silently dropped: for Muon DeepSpeed copies only " +
                       JoinList(accepted) + " into the parameter groups (engine.py _configure_basic_optimizer)",
                   "remove it, or use one of the keys Muon reads");
      continue;
    }
    std::string guess = ClosestMatch(key, accepted);
    ctx.ReportIf(kBuildsOptimizer, "optimizer-param-unknown", pointer,
                 "optimizer.params." + key + " is not a parameter of " + ClassText(choice) +
                     ": DeepSpeed passes optimizer.params as keyword arguments, so the constructor raises "
                     "TypeError (unexpected keyword argument '" + key + "')",
                 guess.empty() ? "its parameters are " + JoinList(accepted)
                               : "did you mean \"" + guess + "\"? (its parameters are " + JoinList(accepted) + ")");
  }
}

// The name each class prints in its AMSGrad RuntimeError.
std::string AmsgradName(std::string_view cls) {
  if (cls == "OnebitAdam") return "1-bit Adam";
  if (cls == "ZeroOneAdam") return "0/1 Adam";
  if (cls == "OnebitLamb") return "1-bit Lamb";
  return std::string(cls);
}

// Values the constructors refuse (torch.optim's ValueErrors, DeepSpeed's AMSGrad RuntimeError).
void CheckOptimizerValues(RuleContext& ctx, const OptimizerChoice& choice, const Json& params) {
  const OptimizerClass& cls = *choice.cls;
  auto at = [](const std::string& key) { return PointerJoin("/optimizer/params", key); };
  if (cls.rejects_amsgrad && params.contains("amsgrad") && PyTruthy(params["amsgrad"])) {
    ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", at("amsgrad"),
                 "amsgrad is " + ShowValue(params["amsgrad"]) + ": " + std::string(cls.name) + " raises \"" +
                     AmsgradName(cls.name) +
                     " does not support the AMSGrad variant.\" (the flag is tested for truthiness, so \"false\" counts)",
                 "remove amsgrad, or set \"torch_adam\": true to use torch.optim's Adam/AdamW with amsgrad");
  }
  if (cls.name == "MuonWithAuxAdam" && params.contains("ns_method")) {
    const Json& m = params["ns_method"];
    if (!m.is_string() || (m != "standard" && m != "gram")) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", at("ns_method"),
                   "ns_method is " + ShowValue(m) + ": MuonWithAuxAdam asserts \"ns_method must be one of "
                   "{'standard', 'gram'}\"",
                   "use \"gram\" (the default) or \"standard\"");
    }
  }
  if (!choice.deepspeed_name.empty() && choice.deepspeed_name.starts_with("mu") && choice.deepspeed_name != "muon" &&
      !params.contains("lr")) {
    ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", "/optimizer/params",
                 "optimizer " + choice.deepspeed_name + " without params.lr: mup's process_param_groups "
                 "reads kwargs['lr'] and raises KeyError: 'lr'",
                 "add \"lr\" to optimizer.params");
  }
  if (!cls.torch_ranges) return;
  // torch/optim/*.py __init__: `if not 0.0 <= lr: raise ValueError(f"Invalid learning rate: {lr}")`.
  auto negative = [&](const char* key, const char* what) {
    if (!params.contains(key) || !params[key].is_number()) return;
    if (params[key].get<double>() < 0) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", at(key),
                   std::string(key) + " is " + ShowValue(params[key]) + ": " + std::string(cls.name) +
                       " raises ValueError(\"Invalid " + what + ": " + ShowValue(params[key]) + "\")",
                   std::string("use a value >= 0 for ") + key);
    }
  };
  negative("lr", "learning rate");
  negative("eps", "epsilon value");
  negative("weight_decay", "weight_decay value");
  negative("momentum", "momentum value");
  if (params.contains("betas") && params["betas"].is_array()) {
    const Json& b = params["betas"];
    for (size_t i = 0; i < b.size() && i < 2; ++i) {
      if (b[i].is_number() && (b[i].get<double>() < 0 || b[i].get<double>() >= 1)) {
        ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", at("betas") + "/" + std::to_string(i),
                     "betas[" + std::to_string(i) + "] is " + ShowValue(b[i]) + ": " + std::string(cls.name) +
                         " raises ValueError(\"Invalid beta parameter at index " + std::to_string(i) + "\"): it must be in [0, 1)",
                     "use a value in [0, 1), for example 0.9 and 0.999");
      }
    }
  }
  if (cls.params.size() > 0 && Contains(cls.params, "nesterov") && params.contains("nesterov") &&
      PyTruthy(params["nesterov"])) {
    double momentum = params.contains("momentum") && params["momentum"].is_number() ? params["momentum"].get<double>() : 0;
    double dampening = params.contains("dampening") && params["dampening"].is_number() ? params["dampening"].get<double>() : 0;
    if (momentum <= 0 || dampening != 0) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", at("nesterov"),
                   "nesterov with momentum " + std::to_string(momentum) + " and dampening " + std::to_string(dampening) +
                       ": torch.optim.SGD raises \"Nesterov momentum requires a momentum and zero dampening\"",
                   "set momentum > 0 and dampening 0, or drop nesterov");
    }
  }
}

void CheckZero(RuleContext& ctx, const std::string& type, const OptimizerChoice& choice) {
  std::optional<int64_t> stage = EffectiveZeroStage(ctx);
  if (!stage || *stage == 0 || choice.cls == nullptr) return;
  const std::string& name = choice.deepspeed_name;
  if (name == "onebitadam" || name == "zerooneadam" || name == "onebitlamb") return;  // zero-onebit-optimizer
  const ConfigView& v = ctx.view();
  if (!choice.cls->zero_supported) {
    const Json* allow = v.Get("/zero_allow_untested_optimizer");
    if (allow == nullptr || !PyTruthy(*allow)) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-zero-untested", "/optimizer/type",
                   "optimizer " + type + " builds " + ClassText(choice) + ", which is not in ZeRO's tested list "
                   "(runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS): with ZeRO stage " + std::to_string(*stage) +
                   " DeepSpeed asserts \"You are using an untested ZeRO Optimizer. Please add "
                   "<\\\"zero_allow_untested_optimizer\\\": true> in the configuration file to use it.\"",
                   "add \"zero_allow_untested_optimizer\": true, or use Adam/AdamW, Adagrad or Lion");
    }
  }
  if (name == "muon") {
    auto rs = PydanticBool(v, "/zero_optimization/reduce_scatter", true);
    if (rs.value_or(true) && *stage == 3) {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", "/optimizer/type",
                   "Muon with ZeRO stage 3 and reduce_scatter on (its default): stage3.py raises "
                   "ValueError(\"Muon and reduce scatter cannot be used together\")",
                   "set zero_optimization.reduce_scatter to false");
    } else if (*stage == 3 && PydanticBool(v, "/zero_optimization/zero_quantized_gradients", false).value_or(false)) {
      // The next check of the same constructor (stage3.py DeepSpeedZeroOptimizer_Stage3.__init__):
      // qgZ reduces gradients by all-to-all, which Muon's whole-matrix update cannot take.
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", "/zero_optimization/zero_quantized_gradients",
                   "Muon with ZeRO stage 3 and zero_quantized_gradients: stage3.py raises "
                   "ValueError(\"Muon and all2all process group cannot be used together\")",
                   "set zero_optimization.zero_quantized_gradients to false");
    } else if (rs.value_or(true) && OffloadDevice(v, "offload_optimizer") != "none") {
      ctx.ReportIf(kBuildsOptimizer, "optimizer-param-value", "/optimizer/type",
                   "Muon with ZeRO stage " + std::to_string(*stage) + ", reduce_scatter and optimizer offload: "
                   "stage_1_and_2.py raises \"Muon with reduce scatter does not support optimizer offload\"",
                   "disable zero_optimization.reduce_scatter or the optimizer offload");
    }
  }
}

// engine.py _do_sanity_check: `assert self.dynamic_loss_scale()` for lamb and onebitlamb, where
// dynamic_loss_scale() is fp16.loss_scale == 0 whether or not fp16 is enabled.
void CheckLambLossScale(RuleContext& ctx, const OptimizerChoice& choice) {
  if (choice.deepspeed_name != "lamb" && choice.deepspeed_name != "onebitlamb") return;
  auto scale = ctx.view().Number("/fp16/loss_scale");
  if (!scale.present() || scale.value == 0) return;
  ctx.ReportIf(kBuildsOptimizer, "optimizer-lamb-static-loss-scale", scale.pointer,
               "fp16.loss_scale is " + ShowValue(*ctx.view().Get(scale.pointer)) + " (a static loss scale) with the " +
                   choice.deepspeed_name + " optimizer: DeepSpeed asserts \"DeepSpeed " + choice.deepspeed_name +
                   " optimizer requires dynamic loss scaling\" (checked even when fp16 is disabled)",
               "set fp16.loss_scale to 0 (dynamic loss scaling)");
}

void CheckOptimizer(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* section = v.Get("/optimizer");
  if (section == nullptr || !section->is_object()) return;
  const Json* type = v.Get("/optimizer/type");
  const Json* params = v.Get("/optimizer/params");
  if (type == nullptr || type->is_null()) {
    // config.py get_optimizer_params returns None without a type: the params are never read.
    if (params != nullptr) {
      if (Holds(kBuildsOptimizer, ctx.options().consumer) != false) ctx.Report("optimizer-params-without-type", "/optimizer/params",
                 "optimizer.params without optimizer.type: DeepSpeed ignores the section (get_optimizer_params "
                 "returns None), so these settings do nothing",
                 "add \"type\" (for example \"AdamW\"), or remove the section if the script passes its own optimizer");
    }
    return;
  }
  if (!type->is_string()) return;  // schema-type (config.py calls .lower() on it: AttributeError)
  const std::string& name = type->get_ref<const std::string&>();
  OptimizerChoice choice = ChooseOptimizer(name, v.root());
  CheckType(ctx, name, choice);
  if (choice.cls == nullptr) return;
  if (params != nullptr && params->is_object()) {
    CheckParams(ctx, choice, *params);
    CheckOptimizerValues(ctx, choice, *params);
  } else if (choice.deepspeed_name.starts_with("mu") && choice.deepspeed_name != "muon") {
    CheckOptimizerValues(ctx, choice, Json::object());
  }
  CheckZero(ctx, name, choice);
  CheckLambLossScale(ctx, choice);
}

}  // namespace

RuleSet OptimizerRules() {
  RuleSet set;
  set.name = "optimizer";
  set.rules = {
      {"optimizer-type-unknown", Severity::kError, "optimizer",
       "optimizer.type names no optimizer DeepSpeed can build",
       "DeepSpeed lower-cases optimizer.type when the result is one of DEEPSPEED_OPTIMIZERS "
       "(runtime/config.py: adagrad, adam, adamw, lamb, onebitadam, onebitlamb, zerooneadam, "
       "muadam, muadamw, musgd, lion, muon) and otherwise looks it up in torch.optim exactly as "
       "written; _do_sanity_check (runtime/engine.py, 0.19.6) asserts \"X is not a supported "
       "DeepSpeed Optimizer\" when neither matches. \"Adam\" and \"ADAM\" work, \"sgd\" does not "
       "(torch.optim.SGD is case-sensitive). Only when DeepSpeed builds the optimizer from this "
       "section: a warning without --consumer.",
       ""},
      {"optimizer-param-unknown", Severity::kError, "optimizer",
       "optimizer.params has a key the optimizer's constructor does not take",
       "_configure_basic_optimizer (runtime/engine.py, 0.19.6) calls the chosen class with "
       "**optimizer.params after removing torch_adam and adam_w_mode (Adam/AdamW) and "
       "fp32_optimizer_states (CPU Adam). The class depends on the config: FusedAdam, "
       "DeepSpeedCPUAdam when offload_optimizer.device is cpu or nvme, torch.optim.Adam/AdamW with "
       "torch_adam; torch.optim.Adagrad or DeepSpeedCPUAdagrad; FusedLion or DeepSpeedCPULion; "
       "FusedLamb; the 1-bit optimizers; mup's MuAdam/MuAdamW/MuSGD; torch.optim classes by name. "
       "A key outside the signature is a TypeError (unexpected keyword argument), and so is a key "
       "DeepSpeed passes itself (params, adamw_mode for CPU Adam, deepspeed for 1-bit ones). The "
       "same params can be valid without offload and invalid with it (set_grad_none, eps for Lion, "
       "lr_decay for Adagrad).",
       ""},
      {"optimizer-param-ignored", Severity::kWarning, "optimizer",
       "an optimizer.params key Muon silently drops",
       "For muon, DeepSpeed builds MuonWithAuxAdam's parameter groups from lr, momentum, "
       "weight_decay, muon_lr, ns_method, betas, eps and adam_lr only; any other key is dropped "
       "without a message.",
       ""},
      {"optimizer-param-value", Severity::kError, "optimizer",
       "an optimizer.params value the constructor refuses",
       "FusedAdam, FusedLamb and the 1-bit optimizers raise RuntimeError for a truthy amsgrad; "
       "torch.optim classes raise ValueError for a negative lr, eps, weight_decay or momentum, betas "
       "outside [0, 1) and nesterov without momentum; Muon's ns_method must be standard or gram; "
       "mup's optimizers need lr; Muon with ZeRO-3 needs reduce_scatter false.",
       ""},
      {"optimizer-zero-untested", Severity::kError, "optimizer",
       "ZeRO with an optimizer outside its tested list, without zero_allow_untested_optimizer",
       "_do_optimizer_sanity_check (runtime/engine.py, 0.19.6) asserts \"You are using an untested "
       "ZeRO Optimizer...\" at ZeRO stage >= 1 unless zero_allow_untested_optimizer is truthy. The "
       "list (runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS, exact type match) holds torch Adam, "
       "AdamW and Adagrad, FusedAdam, DeepSpeedCPUAdam, ZenFlowCPUAdam, DeepSpeedCPUAdagrad, "
       "FusedLion, DeepSpeedCPULion and MuonWithAuxAdam: Lamb, MuSGD and every other torch.optim "
       "class need the flag. (The Hugging Face Trainer sets the flag itself when it builds the "
       "optimizer, which it does only when the config has no optimizer section.)",
       ""},
      {"optimizer-lamb-static-loss-scale", Severity::kError, "optimizer",
       "Lamb or OneBitLamb with a static fp16.loss_scale",
       "_do_sanity_check (runtime/engine.py, 0.19.6) asserts \"DeepSpeed lamb optimizer requires "
       "dynamic loss scaling\" when fp16.loss_scale is not 0, whether or not fp16 is enabled.",
       ""},
      {"optimizer-params-without-type", Severity::kWarning, "optimizer",
       "optimizer.params without optimizer.type",
       "get_optimizer_params (runtime/config.py) returns None without a type, so DeepSpeed never "
       "reads the params: the section does nothing.",
       ""},
  };
  set.check = CheckOptimizer;
  return set;
}

}  // namespace dsp
