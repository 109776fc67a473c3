// SPDX-License-Identifier: Apache-2.0
// The scheduler section as DeepSpeed 0.19.6 builds it (runtime/engine.py _scheduler_from_config):
// the type is an attribute of deepspeed.runtime.lr_schedules, else of torch.optim.lr_scheduler
// (exact spelling), called as scheduler(optimizer, **params). So params are the constructor's
// keyword arguments, a missing "params" is a TypeError, required ones must be present, and the
// constructors' own checks apply (lr_schedules.py: warmup_num_steps a positive int since 0.19.3,
// step sizes since 0.19.4). Only when DeepSpeed builds the scheduler from this section.
#include <cmath>
#include <cstdlib>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

using namespace ds_semantics;
constexpr Condition kBuildsScheduler = Condition::kDeepSpeedBuildsScheduler;

struct SchedulerClass {
  std::string_view name;
  bool deepspeed;                          // deepspeed.runtime.lr_schedules, else torch.optim.lr_scheduler
  std::vector<std::string_view> required;  // no default in the signature
  std::vector<std::string_view> optional;
  bool buildable = true;                   // false: needs callables or scheduler objects
};

const std::vector<SchedulerClass>& Schedulers() {
  using V = std::vector<std::string_view>;
  static const std::vector<SchedulerClass> all = {
      // deepspeed/runtime/lr_schedules.py (0.19.6)
      {"LRRangeTest", true, {},
       V{"lr_range_test_min_lr", "lr_range_test_step_size", "lr_range_test_step_rate", "lr_range_test_staircase",
         "last_batch_iteration"}},
      {"OneCycle", true, V{"cycle_min_lr", "cycle_max_lr"},
       V{"decay_lr_rate", "cycle_first_step_size", "cycle_second_step_size", "cycle_first_stair_count",
         "cycle_second_stair_count", "decay_step_size", "cycle_momentum", "cycle_min_mom", "cycle_max_mom",
         "decay_mom_rate", "last_batch_iteration"}},
      {"WarmupLR", true, {}, V{"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"}},
      {"WarmupDecayLR", true, V{"total_num_steps"},
       V{"warmup_min_lr", "warmup_max_lr", "warmup_num_steps", "warmup_type", "last_batch_iteration"}},
      {"WarmupCosineLR", true, V{"total_num_steps"},
       V{"warmup_min_ratio", "warmup_num_steps", "cos_min_ratio", "warmup_type", "last_batch_iteration"}},
      // torch/optim/lr_scheduler.py (torch 2.x); every LRScheduler also takes last_epoch and, up to
      // torch 2.6, verbose.
      {"StepLR", false, V{"step_size"}, V{"gamma", "last_epoch", "verbose"}},
      {"MultiStepLR", false, V{"milestones"}, V{"gamma", "last_epoch", "verbose"}},
      {"ExponentialLR", false, V{"gamma"}, V{"last_epoch", "verbose"}},
      {"CosineAnnealingLR", false, V{"T_max"}, V{"eta_min", "last_epoch", "verbose"}},
      {"CosineAnnealingWarmRestarts", false, V{"T_0"}, V{"T_mult", "eta_min", "last_epoch", "verbose"}},
      {"LinearLR", false, {}, V{"start_factor", "end_factor", "total_iters", "last_epoch", "verbose"}},
      {"ConstantLR", false, {}, V{"factor", "total_iters", "last_epoch", "verbose"}},
      {"PolynomialLR", false, {}, V{"total_iters", "power", "last_epoch", "verbose"}},
      {"OneCycleLR", false, V{"max_lr"},
       V{"total_steps", "epochs", "steps_per_epoch", "pct_start", "anneal_strategy", "cycle_momentum",
         "base_momentum", "max_momentum", "div_factor", "final_div_factor", "three_phase", "last_epoch", "verbose"}},
      {"CyclicLR", false, V{"base_lr", "max_lr"},
       V{"step_size_up", "step_size_down", "mode", "gamma", "scale_mode", "cycle_momentum", "base_momentum",
         "max_momentum", "last_epoch", "verbose"}},
      {"ReduceLROnPlateau", false, {},
       V{"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps", "verbose"}},
      {"LambdaLR", false, {}, {}, false},
      {"MultiplicativeLR", false, {}, {}, false},
      {"SequentialLR", false, {}, {}, false},
      {"ChainedScheduler", false, {}, {}, false},
      {"LRScheduler", false, {}, {}, false},
  };
  return all;
}

std::string At(const std::string& key) { return PointerJoin("/scheduler/params", key); }

// isinstance(v, int) in Python: JSON integers and booleans.
bool PyInt(const Json& v) { return v.is_number_integer() || v.is_boolean(); }
double AsDouble(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<double>(); }

// A Python-int-only parameter (warmup_num_steps, lr_range_test_step_size, T_0, total_steps):
// integral floats are ints only when DeepSpeed's hjson loader read the file.
void CheckPositiveInt(RuleContext& ctx, const Json& params, const std::string& key, const std::string& raise) {
  if (!params.contains(key)) return;
  const Json& v = params[key];
  std::string pointer = At(key);
  if (v.is_string() && v.get<std::string>() == "auto") return;  // filled by the Trainer/Accelerate
  bool ok = PyInt(v) && AsDouble(v) > 0;
  if (!ok) {
    ctx.ReportIf(kBuildsScheduler, "scheduler-param-value", pointer,
                 "scheduler.params." + key + " is " + ShowValue(v) + ": " + raise,
                 v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>()
                     ? "write it as an integer (" + std::to_string(static_cast<long long>(v.get<double>())) + ")"
                     : "use a positive integer");
    return;
  }
  if (ctx.doc().float_literals.count(pointer) != 0 && Holds(Condition::kStrictJsonLoader, ctx.options().consumer) != false) {
    ctx.ReportIf(Condition::kStrictJsonLoader, "scheduler-param-value", pointer,
                 "scheduler.params." + key + " is written as a float: DeepSpeed's hjson loader reads it as the "
                 "integer " + v.dump() + ", but json.load keeps a float and " + raise,
                 "write it as an integer (" + v.dump() + ")");
  }
}

// OneCycle's four bounds as per-param-group lists (lr_schedules.py OneCycle._initialize_lr,
// _initialize_momentum). Before PR #8201 (0.19.6) they broadcast the whole list into every param
// group and the first optimizer.step() raises TypeError; since, _format_param takes one value per
// group and raises ValueError on another length, so lists of different lengths cannot all fit.
void CheckOneCycleLists(RuleContext& ctx, const Json& params) {
  std::vector<std::pair<std::string, size_t>> lists;
  // The momentum bounds are read only when cycle_momentum holds (OneCycle.__init__: `if
  // cycle_momentum: self._initialize_momentum(...)`; it defaults to True).
  const bool momentum = !params.contains("cycle_momentum") || PyTruthy(params["cycle_momentum"]);
  for (const char* key : {"cycle_min_lr", "cycle_max_lr", "cycle_min_mom", "cycle_max_mom"}) {
    if (!momentum && std::string_view(key).ends_with("_mom")) continue;
    if (params.contains(key) && params[key].is_array()) lists.emplace_back(key, params[key].size());
  }
  if (lists.empty()) return;
  if (ctx.version() < ds_release::kOneCycleGroupLists) {
    for (const auto& [key, n] : lists) {
      ctx.ReportIf(kBuildsScheduler, "scheduler-onecycle-group-lists", At(key.c_str()),
                   key + " is a list: OneCycle in DeepSpeed " + ctx.version().ToString() +
                       " writes the whole list into every param group (_initialize_lr / _initialize_momentum), "
                       "and the first optimizer.step() raises TypeError (unsupported operand type(s) for -: "
                       "'int' and 'list'); per-group lists arrived in 0.19.6 (PR #8201)",
                   "give one number, or target DeepSpeed >= 0.19.6 (--deepspeed-version)");
    }
    return;
  }
  for (const auto& [key, n] : lists) {
    if (n == lists.front().second) continue;
    ctx.ReportIf(kBuildsScheduler, "scheduler-onecycle-group-lists", At(key.c_str()),
                 key + " has " + std::to_string(n) + " entries and " + lists.front().first + " " +
                     std::to_string(lists.front().second) + ": OneCycle takes one per param group and "
                     "_format_param raises ValueError(\"expected <groups> values for " + key + ", got " +
                     std::to_string(n) + "\") for every length but the optimizer's number of param groups",
                 "give every list one entry per optimizer param group");
    return;
  }
}

void CheckSchedulerValues(RuleContext& ctx, const SchedulerClass& cls, const Json& params) {
  const std::string name(cls.name);
  if (name == "OneCycle") CheckOneCycleLists(ctx, params);
  if (name.starts_with("Warmup") && ctx.version() >= ds_release::kWarmupStepsValidated) {
    CheckPositiveInt(ctx, params, "warmup_num_steps",
                     name + " raises ValueError(\"warmup_num_steps must be a positive integer\") (lr_schedules.py, since 0.19.3)");
    const Json* w = params.contains("warmup_num_steps") ? &params["warmup_num_steps"] : nullptr;
    Consumer c = ctx.options().consumer;
    if (w != nullptr && w->is_string() && *w == "auto" && (c == Consumer::kHfTrainer || c == Consumer::kAccelerate)) {
      ctx.ReportAs(Severity::kWarning, "scheduler-param-value", At("warmup_num_steps"),
                   std::string("warmup_num_steps is \"auto\": ") +
                       (c == Consumer::kHfTrainer ? "the Trainer fills it with TrainingArguments.get_warmup_steps(), 0 unless --warmup_steps or --warmup_ratio is set"
                                                  : "Accelerate fills it with DummyScheduler.warmup_num_steps, 0 by default") +
                       ", and " + name + " raises \"warmup_num_steps must be a positive integer, got 0\"",
                   c == Consumer::kHfTrainer ? "pass --warmup_steps (or --warmup_ratio), or write the number here"
                                             : "pass warmup_num_steps to DummyScheduler, or write the number here");
    }
  }
  if (params.contains("warmup_type")) {
    const Json& t = params["warmup_type"];
    if (t.is_array() || t.is_object()) {
      ctx.ReportIf(kBuildsScheduler, "scheduler-param-value", At("warmup_type"),
                   "warmup_type is a " + std::string(t.type_name()) + ": " + name +
                       " raises TypeError (unhashable type) when it tests `warmup_type not in {'log', 'linear'}`",
                   "use \"log\" or \"linear\"");
    } else if (!(t == "log" || t == "linear" || (t.is_string() && t == "auto"))) {
      if (Holds(kBuildsScheduler, ctx.options().consumer) != false) ctx.Report("scheduler-warmup-type-fallback", At("warmup_type"),
                 "warmup_type is " + ShowValue(t) + ": " + name + " logs \"Using unknown warmup_type\" and uses "
                 "\"log\" (the names are case-sensitive)",
                 "use \"log\" or \"linear\"");
    }
  }
  if ((name == "WarmupDecayLR" || name == "WarmupCosineLR") && params.contains("total_num_steps")) {
    const Json& t = params["total_num_steps"];
    if (!t.is_number() && !t.is_boolean() && !(t.is_string() && t == "auto")) {
      ctx.ReportIf(kBuildsScheduler, "scheduler-param-value", At("total_num_steps"),
                   "total_num_steps is " + ShowValue(t) + ": " + name +
                       " compares it with warmup_num_steps and raises TypeError ('<' not supported)",
                   "use the number of optimizer steps of the run");
    } else if (t.is_number()) {
      const Json* w = params.contains("warmup_num_steps") ? &params["warmup_num_steps"] : nullptr;
      double warmup = w != nullptr && w->is_number() ? std::max(2.0, w->get<double>()) : 1000.0;
      if (t.get<double>() < warmup) {
        if (Holds(kBuildsScheduler, ctx.options().consumer) != false) ctx.Report("scheduler-total-below-warmup", At("total_num_steps"),
                   "total_num_steps (" + t.dump() + ") is below the warmup (" + std::to_string(static_cast<long long>(warmup)) +
                       " steps" + (w == nullptr ? ", the default" : "") + "): " + name +
                       " only logs a warning, and the run never leaves warmup",
                   "raise total_num_steps to the run's optimizer steps, or shorten warmup_num_steps");
      }
    }
  }
  if (ctx.version() >= ds_release::kSchedulerStepGuards) {
    if (name == "LRRangeTest") {
      CheckPositiveInt(ctx, params, "lr_range_test_step_size",
                       "LRRangeTest raises ValueError(\"lr_range_test_step_size must be a positive integer\") (since 0.19.4)");
    }
    if (name == "OneCycle") {
      // _initialize_cycle: float() first (numeric strings pass), then > 0 / >= 0.
      auto size = [&](const char* key, bool allow_zero) {
        if (!params.contains(key) || params[key].is_null()) return;
        const Json& v = params[key];
        double d = 0;
        if (v.is_string()) {
          // float(str): numeric strings pass, anything else is ValueError (could not convert).
          const std::string& text = v.get_ref<const std::string&>();
          char* end = nullptr;
          d = std::strtod(text.c_str(), &end);
          while (end != nullptr && (*end == ' ' || *end == '\t')) ++end;
          if (text.empty() || end == text.c_str() || *end != '\0') {
            ctx.ReportIf(kBuildsScheduler, "scheduler-param-value", At(key),
                         std::string(key) + " is " + ShowValue(v) + ": OneCycle calls float() on it and raises "
                         "ValueError (could not convert string to float)",
                         "use a number of steps");
            return;
          }
        } else if (v.is_number() || v.is_boolean()) {
          d = AsDouble(v);
        } else {
          return;
        }
        if (allow_zero ? d < 0 : d <= 0) {
          ctx.ReportIf(kBuildsScheduler, "scheduler-param-value", At(key),
                       std::string(key) + " is " + ShowValue(v) + ": OneCycle raises ValueError(\"" + key +
                           (allow_zero ? " must be non-negative" : " must be positive") + "\") (since 0.19.4)",
                       allow_zero ? "use 0 or more" : "use a positive number of steps");
        }
      };
      size("cycle_first_step_size", false);
      size("cycle_second_step_size", true);
    }
  }
  if (name == "CosineAnnealingWarmRestarts") {
    CheckPositiveInt(ctx, params, "T_0", "CosineAnnealingWarmRestarts raises ValueError(\"Expected positive integer T_0\")");
  }
  if (name == "OneCycleLR") {
    CheckPositiveInt(ctx, params, "total_steps", "OneCycleLR raises ValueError(\"Expected positive integer total_steps\")");
    if (!params.contains("total_steps") && !(params.contains("epochs") && params.contains("steps_per_epoch"))) {
      ctx.ReportIf(kBuildsScheduler, "scheduler-param-missing", "/scheduler/params",
                   "OneCycleLR without total_steps (or epochs and steps_per_epoch): it raises ValueError(\"You must "
                   "define either total_steps OR (epochs AND steps_per_epoch)\")",
                   "add \"total_steps\"");
    }
    if (params.contains("pct_start")) {
      const Json& p = params["pct_start"];
      if (!(p.is_number_float() && p.get<double>() >= 0 && p.get<double>() <= 1)) {
        bool hjson_int = ctx.doc().float_literals.count(At("pct_start")) != 0 && p.is_number_integer();
        ctx.ReportIf(kBuildsScheduler, "scheduler-param-value", At("pct_start"),
                     "pct_start is " + ShowValue(p) +
                         (hjson_int ? " (written as a float, but hjson, DeepSpeed's loader, makes a whole number an int)" : "") +
                         ": OneCycleLR requires a float between 0 and 1 and raises ValueError(\"Expected float between 0 "
                         "and 1 pct_start\")",
                     "use a fraction such as 0.3");
      }
    }
  }
}

void CheckScheduler(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* section = v.Get("/scheduler");
  if (section == nullptr || !section->is_object()) return;
  const Json* type = v.Get("/scheduler/type");
  const Json* params = v.Get("/scheduler/params");
  if (type == nullptr || type->is_null()) {
    if (params != nullptr) {
      if (Holds(kBuildsScheduler, ctx.options().consumer) != false) ctx.Report("scheduler-params-without-type", "/scheduler/params",
                 "scheduler.params without scheduler.type: DeepSpeed ignores the section (get_scheduler_params returns None)",
                 "add \"type\" (for example \"WarmupLR\"), or remove the section");
    }
    return;
  }
  if (!type->is_string()) return;  // schema-type
  const std::string& name = type->get_ref<const std::string&>();
  const SchedulerClass* cls = nullptr;
  std::vector<std::string> names;
  for (const auto& s : Schedulers()) {
    if (s.buildable) names.emplace_back(s.name);
    if (s.name == name) cls = &s;
  }
  if (cls == nullptr) {
    std::string guess = ClosestMatch(name, names);
    for (const auto& n : names) {
      if (Lower(n) == Lower(name)) guess = n;
    }
    ctx.ReportIf(kBuildsScheduler, "scheduler-type-unknown", "/scheduler/type",
                 "scheduler type \"" + name + "\" is neither in deepspeed.runtime.lr_schedules nor in "
                 "torch.optim.lr_scheduler: DeepSpeed asserts \"DeepSpeed does not recognize LR scheduler " + name + "\"",
                 guess.empty() ? "use WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle or LRRangeTest"
                               : "did you mean \"" + guess + "\"? (scheduler names are case-sensitive)");
    return;
  }
  if (!cls->buildable) {
    ctx.ReportIf(kBuildsScheduler, "scheduler-type-unknown", "/scheduler/type",
                 "torch.optim.lr_scheduler." + name + " needs Python callables or scheduler objects, which a JSON "
                 "config cannot hold: DeepSpeed's call " + name + "(optimizer, **params) fails",
                 "build this scheduler in the script and pass lr_scheduler= to deepspeed.initialize");
    return;
  }
  // A torch scheduler gets DeepSpeed's wrapped optimizer (ZeRO, fp16, bf16), which is no
  // torch.optim.Optimizer: LRScheduler.__init__ raises TypeError (deepspeedai/DeepSpeed#6992).
  if (!cls->deepspeed) {
    std::optional<int64_t> stage = EffectiveZeroStage(ctx);
    // engine.py _do_optimizer_sanity_check: ZeRO-1 with bf16 and fp32 accumulation (no cpu offload)
    // runs BF16_Optimizer; without ZeRO, fp16 and bf16 both use FP16_Optimizer or FP16_UnfusedOptimizer.
    const Json* accum = v.Get("/data_types/grad_accum_dtype");
    bool fp32_accum = accum != nullptr && accum->is_string() &&
                      (*accum == "fp32" || *accum == "float32" || *accum == "float" || *accum == "torch.float32");
    std::string wrapper = stage && *stage == 1 && Bf16Enabled(v) && fp32_accum && OffloadDevice(v, "offload_optimizer") != "cpu"
                              ? "BF16_Optimizer"
                          : stage && *stage >= 1 ? (*stage == 3 ? "DeepSpeedZeroOptimizer_Stage3" : "DeepSpeedZeroOptimizer")
                          : ctx.options().pp > 1 && Bf16Enabled(v) ? "BF16_Optimizer"
                          : Fp16Enabled(v) || Bf16Enabled(v)      ? "FP16_Optimizer"
                                                                  : "";
    if (!wrapper.empty()) {
      ctx.ReportIf(kBuildsScheduler, "scheduler-torch-wrapped-optimizer", "/scheduler/type",
                   "torch.optim.lr_scheduler." + name + " from the config gets DeepSpeed's wrapped optimizer (" + wrapper +
                       (wrapper == "FP16_Optimizer" ? " or FP16_UnfusedOptimizer" : "") +
                       "), and torch raises TypeError(\"" + wrapper + " is not an Optimizer\")",
                   "use one of DeepSpeed's schedulers (WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, "
                   "LRRangeTest), or build the torch scheduler in the script and pass it as lr_scheduler=");
    }
  }
  if (params == nullptr || params->is_null()) {
    ctx.ReportIf(kBuildsScheduler, "scheduler-params-missing", "/scheduler",
                 "scheduler " + name + " without \"params\": DeepSpeed calls " + name + "(optimizer, **None) and raises "
                 "TypeError (argument after ** must be a mapping), even for a scheduler whose arguments all have defaults",
                 "add \"params\": {} (or the scheduler's settings)");
    return;
  }
  if (!params->is_object()) return;  // schema-type
  std::vector<std::string> accepted;
  for (auto p : cls->required) accepted.emplace_back(p);
  for (auto p : cls->optional) accepted.emplace_back(p);
  for (auto it = params->begin(); it != params->end(); ++it) {
    const std::string& key = it.key();
    if (Contains(cls->required, key) || Contains(cls->optional, key)) continue;
    std::string guess = ClosestMatch(key, accepted);
    ctx.ReportIf(kBuildsScheduler, "scheduler-param-unknown", At(key),
                 "scheduler.params." + key + " is not a parameter of " + name +
                     ": DeepSpeed passes scheduler.params as keyword arguments, so it raises TypeError (unexpected "
                     "keyword argument '" + key + "')",
                 guess.empty() ? "its parameters are " + JoinList(accepted)
                               : "did you mean \"" + guess + "\"? (its parameters are " + JoinList(accepted) + ")");
  }
  for (auto req : cls->required) {
    if (params->contains(std::string(req))) continue;
    ctx.ReportIf(kBuildsScheduler, "scheduler-param-missing", "/scheduler/params",
                 name + " needs scheduler.params." + std::string(req) + ": it has no default, so DeepSpeed's call raises "
                 "TypeError (missing required positional argument '" + std::string(req) + "')",
                 "add \"" + std::string(req) + "\"" +
                     (req == "total_num_steps" ? " (the run's optimizer steps; the Hugging Face Trainer fills \"auto\")" : ""));
  }
  CheckSchedulerValues(ctx, *cls, *params);
}

}  // namespace

RuleSet SchedulerRules() {
  RuleSet set;
  set.name = "scheduler";
  set.rules = {
      {"scheduler-type-unknown", Severity::kError, "scheduler",
       "scheduler.type names no scheduler DeepSpeed can build",
       "_scheduler_from_config (runtime/engine.py, 0.19.6) looks the name up, exactly as written, in "
       "deepspeed.runtime.lr_schedules (LRRangeTest, OneCycle, WarmupLR, WarmupDecayLR, "
       "WarmupCosineLR) and then torch.optim.lr_scheduler, and asserts \"DeepSpeed does not "
       "recognize LR scheduler X\" otherwise. torch's LambdaLR, MultiplicativeLR, SequentialLR and "
       "ChainedScheduler need Python objects and cannot come from JSON. Only when DeepSpeed builds "
       "the scheduler from this section: a warning without --consumer.",
       ""},
      {"scheduler-torch-wrapped-optimizer", Severity::kError, "scheduler",
       "a torch.optim.lr_scheduler class with ZeRO, fp16 or bf16",
       "DeepSpeed builds the scheduler on its wrapped optimizer (DeepSpeedZeroOptimizer, "
       "BF16_Optimizer, FP16_Optimizer), which is not a torch.optim.Optimizer, so torch's "
       "LRScheduler.__init__ raises TypeError(\"X is not an Optimizer\") (deepspeedai/DeepSpeed#6992). "
       "Only fp32 without ZeRO works.",
       ""},
      {"scheduler-params-missing", Severity::kError, "scheduler", "scheduler.type without scheduler.params",
       "DeepSpeed calls scheduler(optimizer, **scheduler_params) and scheduler_params is None "
       "without a params key: TypeError, even for WarmupLR whose arguments all have defaults.",
       ""},
      {"scheduler-param-unknown", Severity::kError, "scheduler",
       "scheduler.params has a key the scheduler's constructor does not take",
       "scheduler.params are keyword arguments: an unknown name is a TypeError (unexpected keyword "
       "argument). DeepSpeed's schedulers take last_batch_iteration, torch's take last_epoch; "
       "WarmupCosineLR takes ratios (warmup_min_ratio, cos_min_ratio), not warmup_min_lr/warmup_max_lr.",
       ""},
      {"scheduler-param-missing", Severity::kError, "scheduler", "a required scheduler parameter is missing",
       "WarmupDecayLR and WarmupCosineLR need total_num_steps, OneCycle cycle_min_lr and "
       "cycle_max_lr, and torch's StepLR step_size, MultiStepLR milestones, ExponentialLR gamma, "
       "CosineAnnealingLR T_max, CosineAnnealingWarmRestarts T_0, OneCycleLR max_lr with "
       "total_steps (or epochs and steps_per_epoch), CyclicLR base_lr and max_lr: without a default "
       "the call raises TypeError.",
       ""},
      {"scheduler-param-value", Severity::kError, "scheduler", "a scheduler parameter value the constructor refuses",
       "lr_schedules.py: WarmupLR, WarmupDecayLR and WarmupCosineLR raise ValueError unless "
       "warmup_num_steps is a positive Python int (isinstance int, so true passes and 1000.0 does "
       "not); LRRangeTest needs a positive int lr_range_test_step_size and OneCycle positive step "
       "sizes; total_num_steps must be a number; torch's OneCycleLR needs a float pct_start in [0, "
       "1] and positive integer total_steps, CosineAnnealingWarmRestarts a positive integer T_0. "
       "hjson reads 1e3 or 1000.0 as the integer 1000, json.load (Hugging Face Trainer, Accelerate) "
       "as a float: a float-written integer is a warning naming that condition without --consumer. "
       "With --consumer hf-trainer or accelerate, warmup_num_steps \"auto\" becomes 0 unless warm-up "
       "steps are given, which fails (warning).",
       "0.19.3 (PR #8126) added the warmup_num_steps check; 0.19.4 (PR #8166) the step-size checks."},
      {"scheduler-onecycle-group-lists", Severity::kError, "scheduler",
       "OneCycle bounds given as lists the targeted release cannot take",
       "OneCycle's cycle_min_lr, cycle_max_lr, cycle_min_mom and cycle_max_mom are documented as "
       "per-param-group lists. Before 0.19.6 (PR #8201) _initialize_lr and _initialize_momentum copy "
       "the whole list into every param group and the first optimizer.step() raises TypeError; "
       "from 0.19.6 each list needs one entry per param group (_format_param raises ValueError), so "
       "lists of different lengths always fail. Only when DeepSpeed builds the scheduler.",
       "0.19.6 (PR #8201) implemented the lists."},
      {"scheduler-warmup-type-fallback", Severity::kWarning, "scheduler", "warmup_type is neither log nor linear",
       "WarmupLR and WarmupCosineLR log \"Using unknown warmup_type\" and use log; the names are case-sensitive.",
       ""},
      {"scheduler-total-below-warmup", Severity::kWarning, "scheduler", "total_num_steps below the warm-up steps",
       "WarmupDecayLR and WarmupCosineLR only log a warning when total_num_steps < max(2, "
       "warmup_num_steps): the learning rate never leaves warm-up.",
       ""},
      {"scheduler-params-without-type", Severity::kWarning, "scheduler", "scheduler.params without scheduler.type",
       "get_scheduler_params (runtime/config.py) returns None without a type: the section does nothing.", ""},
  };
  set.check = CheckScheduler;
  return set;
}

}  // namespace dsp
