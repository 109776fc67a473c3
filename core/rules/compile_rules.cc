// SPDX-License-Identifier: Apache-2.0
// The compile section and DeepCompile : CompileConfig
// (deepspeed/compile/config.py) and what engine.compile() does with it
// (engine.py get_deepspeed_compile_backend, get_autosp_backend, get_autotp_backend,
// get_deepcompile_backend; compile/init_z3.py; compile/passes/tp_compile.py). All of it happens
// only when the training script calls engine.compile(); several combinations silently fall back to
// plain torch.compile, which is why they are warnings.
#include <algorithm>
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/rule_context.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

using namespace ds_semantics;

constexpr const char* kPasses = "/compile/passes";

bool Has(const std::vector<std::string>& passes, const char* name) {
  return std::find(passes.begin(), passes.end(), name) != passes.end();
}

bool CompileFlag(const ConfigView& v, const char* key) {
  return PydanticBool(v, std::string("/compile/") + key, false).value_or(false);
}

// Pass names CompileConfig.passes accepts in the targeted release (a pydantic Literal).
std::vector<std::string> KnownPasses(const DeepSpeedVersion& version) {
  std::vector<std::string> names = {"z1", "z3", "autosp"};
  if (version >= ds_history::kCompileAutoTp) names.push_back("autotp");
  return names;
}

// Returns false when the targeted release has no compile.passes at all.
bool CheckPassNames(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const Json* passes = v.Get(kPasses);
  if (passes == nullptr || passes->is_null()) return true;
  const DeepSpeedVersion& version = ctx.version();
  if (version < ds_history::kCompilePasses) {
    ctx.ReportKey("compile-passes-unavailable", kPasses,
                  "compile.passes does not exist in DeepSpeed " + version.ToString() +
                      ": it arrived with AutoSP in " + ds_history::kCompilePasses.ToString() +
                      " (PR #7860), and the compile section rejects unknown keys (pydantic: extra "
                      "inputs are not permitted)",
                  "remove compile.passes, or target DeepSpeed >= " +
                      ds_history::kCompilePasses.ToString() + " (--deepspeed-version)");
    return false;
  }
  if (!passes->is_array()) return true;  // the schema reports the type
  std::vector<std::string> known = KnownPasses(version);
  std::vector<std::string> quoted;
  for (const auto& k : known) quoted.push_back("'" + k + "'");
  for (size_t i = 0; i < passes->size(); ++i) {
    const Json& p = (*passes)[i];
    std::string name = p.is_string() ? p.get<std::string>() : "";
    if (p.is_string() && std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string message = "compile.passes[" + std::to_string(i) + "] is " + ShowValue(p) +
                          ": CompileConfig accepts only " + JoinList(quoted, " or ") +
                          " (pydantic: \"Input should be " + JoinList(quoted, " or ") + "\")";
    if (name == "autotp") {
      message += "; the autotp pass arrived in " + ds_history::kCompileAutoTp.ToString() +
                 " (PR #8204)";
    }
    std::string suggestion = p.is_string() ? ClosestMatch(Lower(name), known) : "";
    ctx.Report("compile-pass-unknown", PointerJoin(kPasses, std::to_string(i)), message,
               name == "autotp" ? "remove \"autotp\", or target DeepSpeed >= " +
                                      ds_history::kCompileAutoTp.ToString()
               : suggestion.empty() ? "use one of " + JoinList(known, ", ")
                                    : "did you mean \"" + suggestion + "\"?");
  }
  return true;
}

// `passes` holds the entries the targeted release accepts; a rejected entry is reported by
// compile-pass-unknown, and the rest is still checked so that one run shows every problem.
void CheckDispatch(RuleContext& ctx, const std::vector<std::string>& passes) {
  const ConfigView& v = ctx.view();
  const ParallelConfig& pc = ctx.parallel();
  const Json* passes_json = v.Get(kPasses);
  bool has_passes = passes_json != nullptr && passes_json->is_array() && !passes_json->empty();

  if (!pc.deepcompile) {
    if (has_passes) {
      ctx.Report("compile-passes-unused", kPasses,
                 "compile.passes is set but compile.deepcompile is not true: engine.compile() "
                 "consults the passes only in DeepCompile mode, so this list does nothing",
                 "set \"deepcompile\": true in the compile section, or remove passes");
    }
    return;
  }

  bool autosp = Has(passes, "autosp"), autotp = Has(passes, "autotp");
  bool zero_pass = Has(passes, "z1") || Has(passes, "z3");
  auto stage = EffectiveZeroStage(ctx);

  if (autotp && (autosp || zero_pass)) {
    std::vector<std::string> others;
    for (const char* p : {"autosp", "z1", "z3"}) {
      if (Has(passes, p)) others.push_back(std::string("\"") + p + "\"");
    }
    ctx.Report("compile-autotp-combined", kPasses,
               "compile.passes combines \"autotp\" with " + JoinList(others) +
                   ": engine.compile() raises NotImplementedError \"The AutoTP compile pass cannot "
                   "yet be combined with AutoSP or the ZeRO passes\"",
               "run \"autotp\" on its own: \"passes\": [\"autotp\"]");
    return;
  }

  if (autosp) {
    if (stage && *stage != 0 && *stage != 1) {
      ctx.Report("compile-autosp-zero-stage", kPasses,
                 "the autosp pass with ZeRO stage " + std::to_string(*stage) +
                     ": DeepSpeed logs \"Currently AutoSP does not compose with ZeRO stage 2 and "
                     "3. Falling back to the torch compiler.\" and runs plain torch.compile, "
                     "without sequence parallelism",
                 "use ZeRO stage 0 or 1 with AutoSP");
    } else if (pc.autoep_enabled && pc.ep > 1) {
      // get_autosp_backend forces compile_kwargs['fullgraph'] = True; AutoEP's dispatch reads the
      // exchanged split counts on the host (auto_ep_layer.py _split_plan_from_expert_counts:
      // .cpu().tolist()), a graph break that fullgraph turns into an error.
      ctx.Report("compile-autosp-graph-break", kPasses,
                 "the autosp pass compiles with fullgraph=True (engine.py get_autosp_backend), and AutoEP "
                 "(autoep_size " + std::to_string(pc.ep) + ") reads its all-to-all split counts on the host "
                 "(auto_ep_layer.py _split_plan_from_expert_counts: .cpu().tolist()): a graph break, which "
                 "fullgraph makes torch.compile raise instead of splitting the graph",
                 "use eager Ulysses (sequence_parallel_size without the autosp pass) with AutoEP, or check "
                 "that the MoE layers are excluded from the compiled region");
    }
    return;
  }

  if (autotp) {
    if (pc.tp <= 1) {
      std::string tp = pc.autotp_size.present() ? std::to_string(pc.autotp_size.value) : "not set";
      ctx.Report("compile-autotp-fallback", kPasses,
                 "the autotp pass needs tensor_parallel.autotp_size > 1 (it is " + tp +
                     "): DeepSpeed logs \"AutoTP compile pass requires tensor_parallel.autotp_size "
                     "> 1. Falling back to the torch compiler.\" and runs plain torch.compile",
                 "set \"tensor_parallel\": {\"autotp_size\": N} with N > 1, or remove \"autotp\"");
      return;
    }
    auto overlap = PydanticBool(v, "/tensor_parallel/tp_overlap_comm", false);
    if (overlap.value_or(false)) {
      ctx.Report("compile-tp-overlap-comm", "/tensor_parallel/tp_overlap_comm",
                 "tensor_parallel.tp_overlap_comm is true with the autotp compile pass: the pass "
                 "raises NotImplementedError \"AutoTP compile pass does not support "
                 "tp_overlap_comm\"",
                 "set \"tp_overlap_comm\": false so the collectives are emitted into the graph");
    }
    return;
  }

  // The ZeRO DeepCompile backend: chosen by zero_optimization.stage, not by the pass list.
  if (!stage) return;
  if (*stage == 0) {
    ctx.Report("compile-zero-stage0", "/compile/deepcompile",
               "compile.deepcompile is true with ZeRO stage 0: DeepSpeed logs \"Currently "
               "DeepCompile supports ZeRO stage 1, 2, or 3 only\" and falls back to plain "
               "torch.compile",
               "set zero_optimization.stage to 1, 2 or 3, or use the autosp/autotp passes");
    return;
  }
  for (const char* p : {"z1", "z3"}) {
    if (!Has(passes, p)) continue;
    bool mismatch = (std::string(p) == "z3") ? *stage != 3 : *stage == 3;
    if (!mismatch) continue;
    ctx.Report("compile-zero-pass-ignored", kPasses,
               std::string("compile.passes lists \"") + p + "\" but DeepSpeed picks the DeepCompile "
               "ZeRO pass from zero_optimization.stage (" + std::to_string(*stage) + "): it runs "
               "the " + (*stage == 3 ? "ZeRO-3" : "ZeRO-1/2") + " pass and the \"" + p +
                   "\" entry has no effect",
               *stage == 3 ? "remove \"z1\", or write \"z3\" to match stage 3"
                           : "remove \"z3\" (a ZeRO-3 schedule needs zero_optimization.stage 3)");
  }
  // init_z1_and_2 / init_z3 (0.19.6): dc.init(engine.data_parallel_group, ...) builds DeepCompile's
  // one NCCL communicator, and every parameter of the optimizer's groups is registered with it;
  // nothing in deepspeed/compile knows AutoEP's expert groups. (Folded AutoEP is refused outright:
  // ep-fold-deepcompile.)
  if (pc.autoep_enabled && pc.ep > 1 && pc.tp <= 1) {
    ctx.Report("compile-deepcompile-expert-groups", "/compile/deepcompile",
               "DeepCompile runs ZeRO here, and it reduces (and at stage 3 gathers) every parameter over "
               "engine.data_parallel_group (init_z1_and_2 / init_z3: dc.init): AutoEP's routed experts, which "
               "eager ZeRO partitions and reduces over their expert-data-parallel group, get no group of "
               "their own, although the ranks of that group hold different experts",
               "turn compile.deepcompile off for AutoEP models (eager ZeRO keeps the expert groups), or "
               "check the expert gradients against an eager run before training");
  }

  if (*stage != 3) return;
  // init_z3 (compile/init_z3.py), in its order.
  std::string opt_dev = OffloadDevice(v, "offload_optimizer");
  bool opt_states = CompileFlag(v, "offload_opt_states");
  bool activation = CompileFlag(v, "offload_activation");
  bool params = CompileFlag(v, "offload_parameters");
  bool implied = !params && ZeroOffloadTurnsOnCompileOffloadParameters(v);
  std::string params_text =
      implied ? "offload_parameters (turned on by the engine because zero_optimization offloads "
                "both optimizer and parameters to cpu)"
              : "offload_parameters";
  if (opt_states && (opt_dev == "cpu" || opt_dev == "nvme")) {
    ctx.Report("compile-offload-conflict", "/compile/offload_opt_states",
               "compile.offload_opt_states with zero_optimization.offload_optimizer on " + opt_dev +
                   ": DeepCompile raises \"compile.offload_opt_states cannot be combined with "
                   "ZeRO's zero_optimization.offload_optimizer set to cpu or nvme\"",
               "keep one: ZeRO optimizer offload, or compile.offload_opt_states");
  }
  if (activation && (params || implied || opt_states)) {
    ctx.Report("compile-offload-conflict", "/compile/offload_activation",
               "compile.offload_activation together with " +
                   std::string(opt_states && !(params || implied) ? "offload_opt_states"
                                                                 : params_text) +
                   ": DeepCompile raises \"compile.offload_activation cannot be combined with "
                   "offload_parameters or offload_opt_states\"",
               "choose one offloading target per run");
  }
  if ((params || implied) && opt_states) {
    ctx.Report("compile-offload-conflict", "/compile/offload_opt_states",
               "compile." + params_text +
                   " together with offload_opt_states: with the default schedule DeepCompile "
                   "raises \"offload_parameters and offload_opt_states cannot be enabled together\"",
               implied ? "remove offload_param (or offload_optimizer) from zero_optimization, or "
                         "turn off compile.offload_opt_states"
                       : "choose one offloading target per run");
  }
}

// compile.autoep_non_moe (master, PR #8380): engine.compile() compiles the regions around AutoEP's
// MoE layers with plain torch.compile and refuses, in this order, DeepCompile, a comm_backend other
// than "comm", AutoEP+AutoTP folding, sequence and pipeline parallelism, ZeRO-3 and offload
// (DeepSpeedEngine.compile); compile_autoep_non_moe_regions (runtime/compiler.py) needs an
// AutoEPMoELayer. The releases' CompileConfig forbids the unknown key.
void CheckAutoEpNonMoe(RuleContext& ctx) {
  constexpr const char* kKey = "/compile/autoep_non_moe";
  const ConfigView& v = ctx.view();
  if (!v.Has(kKey)) return;
  if (ctx.version() < ds_history::kCompileAutoEpNonMoe) {
    ctx.ReportKey("compile-autoep-non-moe", kKey,
                  "compile.autoep_non_moe does not exist in DeepSpeed " + ctx.version().ToString() +
                      ": it arrived on master (PR #8380), and the compile section rejects unknown keys (pydantic: "
                      "extra inputs are not permitted)",
                  "remove the key, or target master (--deepspeed-version master)");
    return;
  }
  if (!CompileFlag(v, "autoep_non_moe")) return;
  const ParallelConfig& pc = ctx.parallel();
  const Json* backend = v.Get("/expert_parallel/comm_backend");
  const auto stage = EffectiveZeroStage(ctx);
  auto offloaded = [&](const char* section) {
    std::string device = OffloadDevice(v, section);
    return !device.empty() && device != "none";
  };
  std::string refusal;
  if (pc.deepcompile) {
    refusal = "uses vanilla torch.compile and cannot be combined with DeepCompile";
  } else if (backend != nullptr && *backend != Json("comm")) {
    refusal = "supports only expert_parallel.comm_backend='comm'";
  } else if (pc.tp > 1) {
    refusal = "does not support AutoEP+AutoTP folding yet";
  } else if (pc.sp > 1) {
    refusal = "does not support sequence parallelism yet";
  } else if (ctx.options().pp > 1) {
    refusal = "does not support pipeline parallelism yet";
  } else if (stage && *stage == 3) {
    refusal = "does not support ZeRO Stage 3 yet";
  } else if (offloaded("offload_optimizer") || offloaded("offload_param")) {
    refusal = "does not support optimizer or parameter offload yet";
  }
  if (!refusal.empty()) {
    ctx.Report("compile-autoep-non-moe", kKey,
               "engine.compile() raises ValueError(\"compile.autoep_non_moe=True " + refusal +
                   ".\") (DeepSpeedEngine.compile, master PR #8380)",
               "remove autoep_non_moe, or drop what it refuses");
  } else if (!pc.autoep_enabled) {
    ctx.Report("compile-autoep-non-moe", kKey,
               "compile.autoep_non_moe without AutoEP (expert_parallel.enabled is not true): "
               "compile_autoep_non_moe_regions finds no AutoEPMoELayer and raises ValueError",
               "enable expert_parallel, or remove autoep_non_moe");
  }
}

}  // namespace

RuleSet CompileRules() {
  RuleSet set;
  set.name = "compile";
  set.rules = {
      {"compile-passes-unavailable", Severity::kError, "compile",
       "compile.passes on a DeepSpeed release without it",
       "CompileConfig is a pydantic section with unknown keys forbidden; before AutoSP it had no "
       "passes field.",
       "0.18.9 (PR #7860, AutoSP) added compile.passes with \"z1\", \"z3\", \"autosp\"."},
      {"compile-pass-unknown", Severity::kError, "compile", "a compile pass name DeepSpeed rejects",
       "compile.passes is a list of a pydantic Literal: \"z1\", \"z3\", \"autosp\" and, from "
       "0.19.6, \"autotp\"; other entries fail validation when the config is read.",
       "0.18.9 accepted z1, z3, autosp; 0.19.6 (PR #8204) added autotp."},
      {"compile-passes-unused", Severity::kWarning, "compile",
       "compile.passes without compile.deepcompile",
       "engine.compile() resolves the DeepSpeed backend (and with it the passes) only when "
       "compile.deepcompile is true; otherwise the list is validated and ignored.",
       ""},
      {"compile-autosp-graph-break", Severity::kWarning, "compile",
       "the autosp pass (fullgraph) with AutoEP's host syncs",
       "get_autosp_backend sets fullgraph=True; AutoEP's dispatch calls .cpu().tolist() on the "
       "exchanged split counts (and the folded path .item() and torch.nonzero), so torch.compile "
       "meets a graph break it is told not to accept. A warning: a model that keeps its MoE layers "
       "out of the compiled region would not hit it.",
       ""},
      {"compile-autotp-combined", Severity::kError, "compile",
       "the autotp pass together with autosp or z1/z3",
       "get_deepspeed_compile_backend raises NotImplementedError \"The AutoTP compile pass cannot "
       "yet be combined with AutoSP or the ZeRO passes\".",
       "0.19.6 (PR #8204)."},
      {"compile-autotp-fallback", Severity::kWarning, "compile",
       "the autotp pass without tensor_parallel.autotp_size > 1",
       "get_autotp_backend logs (info level) \"AutoTP compile pass requires "
       "tensor_parallel.autotp_size > 1. Falling back to the torch compiler.\" and returns no "
       "backend, so the model is compiled with plain torch.compile.",
       ""},
      {"compile-tp-overlap-comm", Severity::kError, "compile",
       "tensor_parallel.tp_overlap_comm with the autotp pass",
       "The AutoTP compile pass (compile/passes/tp_compile.py) raises NotImplementedError for "
       "layers with tp_overlap_comm: the collectives must be emitted into the graph.",
       ""},
      {"compile-autosp-zero-stage", Severity::kWarning, "compile",
       "the autosp pass with ZeRO stage 2 or 3",
       "get_autosp_backend logs (info level) that AutoSP does not compose with ZeRO stage 2 and 3 "
       "and falls back to plain torch.compile: the run has no sequence parallelism.",
       ""},
      {"compile-deepcompile-expert-groups", Severity::kWarning, "compile",
       "DeepCompile ZeRO with AutoEP experts",
       "init_z1_and_2 and init_z3 call dc.init(engine.data_parallel_group, ...) and register every "
       "parameter of the optimizer's groups with that one communicator; deepspeed/compile has no "
       "notion of AutoEP's expert-data-parallel groups, over which eager ZeRO partitions and reduces "
       "the routed experts (stage_1_and_2.py real_dp_process_group, stage3.py ds_process_group). "
       "Read from the source, not run: a warning, not an error.",
       ""},
      {"compile-zero-stage0", Severity::kWarning, "compile", "DeepCompile with ZeRO stage 0",
       "Without the autosp/autotp passes, DeepCompile is the ZeRO backend; get_deepcompile_backend "
       "logs (info level) that it supports ZeRO stage 1, 2 or 3 only and falls back to plain "
       "torch.compile.",
       ""},
      {"compile-zero-pass-ignored", Severity::kWarning, "compile",
       "a z1/z3 pass entry that disagrees with the ZeRO stage",
       "The ZeRO DeepCompile backend is chosen from zero_optimization.stage (init_z1_and_2 for "
       "stages 1-2, init_z3 for stage 3); the \"z1\"/\"z3\" entries of compile.passes are only "
       "consulted to reject combinations with autotp. The ValueError about the ZeRO-3 pass at "
       "stage 1/2 concerns a custom schedule passed to engine.compile(schedule=...), not the "
       "config.",
       ""},
      {"compile-autoep-non-moe", Severity::kError, "compile",
       "compile.autoep_non_moe where engine.compile() refuses it, or in a release",
       "master (PR #8380): DeepSpeedEngine.compile() compiles the non-MoE regions with plain torch.compile and "
       "raises ValueError with DeepCompile, a comm_backend other than comm, AutoTP folding, sequence or pipeline "
       "parallelism, ZeRO-3, or optimizer/parameter offload (also a DeepCompile schedule and compiled autograd, "
       "which are engine.compile() arguments); without AutoEP compile_autoep_non_moe_regions raises. Releases: "
       "CompileConfig forbids the unknown key.",
       "master only (PR #8380)."},
      {"compile-offload-conflict", Severity::kError, "compile",
       "DeepCompile ZeRO-3 offload options that exclude each other",
       "init_z3 raises ValueError for compile.offload_opt_states with ZeRO optimizer offload to "
       "cpu/nvme, for offload_activation with offload_parameters or offload_opt_states, and (with "
       "the default schedule) for offload_parameters with offload_opt_states. The engine turns "
       "offload_parameters on by itself when zero_optimization has both offload_optimizer and "
       "offload_param on cpu.",
       ""},
  };
  set.check = [](RuleContext& ctx) {
    CheckAutoEpNonMoe(ctx);
    if (!CheckPassNames(ctx)) return;
    std::vector<std::string> usable;
    std::vector<std::string> known = KnownPasses(ctx.version());
    for (const auto& p : ctx.parallel().compile_passes) {
      if (std::find(known.begin(), known.end(), p) != known.end()) usable.push_back(p);
    }
    CheckDispatch(ctx, usable);
  };
  return set;
}

}  // namespace dsp
