// SPDX-License-Identifier: Apache-2.0
// AutoEP process-group sizes (module_inject/auto_ep_folding.py, PR #8064):
// build_folding_spec (positive sizes, W % PP, stage % TP, stage % (EP x ETP)) and
// validate_folding_global rules a-i, in module_inject/auto_ep_folding.py. Rules j and k compare the
// runtime mpu with the config and cannot be checked from a file (ep-mpu-unchecked).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/expert_parallel_internal.h"
#include "core/util/text.h"

namespace dsp::autoep {
namespace {

std::string PyList(int64_t n) { return "[" + DivisorList(n) + "]"; }

// The zero_optimization offload key the engine sees as "not None" (pydantic: "auto" and null mean
// unset; the deprecated cpu_offload / cpu_offload_param move into them).
std::string OffloadPointer(const ConfigView& v) {
  for (const char* p :
       {"/zero_optimization/offload_optimizer", "/zero_optimization/offload_param"}) {
    const Json* j = v.Get(p);
    if (j != nullptr && !j->is_null() && !(j->is_string() && j->get<std::string>() == "auto"))
      return p;
  }
  for (const char* p : {"/zero_optimization/cpu_offload", "/zero_optimization/cpu_offload_param"}) {
    if (ds_semantics::PydanticBool(v, p, false).value_or(false)) return p;
  }
  return "";
}

void CheckSpec(RuleContext& ctx, const EpFacts& f) {
  for (const char* key : {"autoep_size", "expert_tensor_parallel_size"}) {
    const Json* j = ctx.view().Get(Key(key));
    const auto& value = std::string(key) == "autoep_size" ? f.ep : f.etp;
    if (j == nullptr || (value && *value >= 1)) continue;
    ctx.Report("ep-size-invalid", Key(key),
               "expert_parallel." + std::string(key) + " must be a positive integer, got " +
                   ds_semantics::ShowValue(*j) +
                   (j->is_number_float() ? " (a float: DeepSpeed reads this section with dict .get "
                                           "and requires a Python int)"
                                         : "") +
                   (f.folding_release ? ": build_folding_spec raises ValueError"
                                      : ": DeepSpeed's expert-group arithmetic fails on it"),
               "write a whole number such as 2, 4 or 8");
  }
  if (!f.world) return;
  const int64_t w = *f.world;
  if (f.pp < 1 || w % f.pp != 0) {
    ctx.Report("ep-fold-pp-divides-world", kSection,
               "pp_size=" + std::to_string(f.pp) + " must divide world_size=" + std::to_string(w) +
                   ". Valid pp_size values: " + PyList(w),
               "use a pipeline size that divides the world size");
    return;
  }
  const int64_t stage = w / f.pp;
  const std::string stage_text =
      "(world_size=" + std::to_string(w) + " / pp_size=" + std::to_string(f.pp) + " = " + std::to_string(stage) + ")";
  if (f.folding_release && stage % f.tp != 0) {
    ctx.Report(
        "ep-fold-autotp-divides-stage", "/tensor_parallel/autotp_size",
        "tensor_parallel.autotp_size=" + std::to_string(f.tp) + " must divide the stage size " + stage_text +
            ". Computed dp would be non-integral. Valid autotp_size values: " + PyList(stage),
        "use one of " + DivisorList(stage) + " for autotp_size");
  }
  if (!f.ep || !f.etp || *f.ep < 1 || *f.etp < 1) return;
  const int64_t width = *f.ep * (f.folding_release ? *f.etp : 1);
  if (stage % width == 0) return;
  if (!f.folding_release) {
    ctx.Report("ep-fold-width-divides-stage", f.ep_pointer(),
               "autoep_size=" + std::to_string(*f.ep) + " must divide the stage size " + stage_text +
                   ". Valid autoep_size values: " + PyList(stage),
               "use one of " + DivisorList(stage) + " for autoep_size");
    return;
  }
  ctx.Report(
      "ep-fold-width-divides-stage",
      *f.etp == 1 ? f.ep_pointer() : Key("expert_tensor_parallel_size"),
      "expert_parallel.autoep_size * expert_parallel.expert_tensor_parallel_size (" + std::to_string(*f.ep) +
          " * " + std::to_string(*f.etp) + " = " + std::to_string(width) + ") must divide the stage size " + stage_text +
          ". Computed edp would be non-integral. Valid expert-width values: " + PyList(stage),
      "pick autoep_size so that autoep_size x expert_tensor_parallel_size is one of " +
          DivisorList(stage));
}

// validate_folding_global, rules a-i, in DeepSpeed's order.
void CheckGlobal(RuleContext& ctx, const EpFacts& f) {
  const ConfigView& v = ctx.view();
  const bool folded = f.folding_release && f.tp > 1;
  const std::string tp_ptr = "/tensor_parallel/autotp_size";
  const std::string tp_text = "tensor_parallel.autotp_size=" + std::to_string(f.tp);
  if (folded && ds_semantics::PydanticBool(v, "/compile/deepcompile", false).value_or(false)) {
    ctx.Report(
        "ep-fold-deepcompile", "/compile/deepcompile",
        "DeepCompile with AutoEP+AutoTP folding is not supported (" + tp_text +
            " with expert_parallel enabled): validate_folding_global raises ValueError",
        "disable compile.deepcompile, or use non-folded AutoEP with tensor_parallel.autotp_size=1");
  }
  if (folded && f.pp > 1) {
    ctx.Report("ep-fold-pipeline", tp_ptr,
               "AutoEP+AutoTP folding currently supports pp_size=1 only; got pp_size=" + std::to_string(f.pp) +
                   " (" + tp_text + ")",
               "drop the pipeline, or set autotp_size to 1 for AutoEP with pipeline parallelism");
  }
  if (folded && f.sp > 1) {
    ctx.Report(
        "ep-fold-sequence-parallel", "/sequence_parallel_size",
        "tensor_parallel.autotp_size and Ulysses sequence parallelism are mutually exclusive for "
        "AutoEP folding (autotp_size=" +
            std::to_string(f.tp) + ", sp_size=" + std::to_string(f.sp) + ")",
        "use either autotp_size > 1 or sequence_parallel_size > 1 with AutoEP, not both");
  }
  if (f.etp && *f.etp != 1 && *f.etp >= 1) {
    ctx.Report(
        "ep-expert-tp", Key("expert_tensor_parallel_size"),
        f.folding_release
            ? "expert_parallel.expert_tensor_parallel_size=" + std::to_string(*f.etp) +
                  " is reserved for "
                  "expert-internal tensor parallelism and is not supported yet (rejected even "
                  "without AutoTP)"
            : "AutoEP only supports expert_parallel.expert_tensor_parallel_size=1 in this "
              "release (expert_tensor_parallel_size=" +
                  std::to_string(*f.etp) + ")",
        "use expert_tensor_parallel_size=1 (or remove the key)");
  }
  const Json* tpp = v.Get("/tensor_parallel/preset_model");
  const Json* epp = v.Get(Key("preset_model"));
  auto is_set = [](const Json* j) {
    return j != nullptr && !j->is_null() && !(j->is_string() && j->get<std::string>() == "auto");
  };
  if (f.folding_release && is_set(tpp) && epp != nullptr && !epp->is_null() && *tpp != *epp) {
    ctx.Report(
        "ep-preset-mismatch", Key("preset_model"),
        "tensor_parallel.preset_model and expert_parallel.preset_model must match when both are "
        "set (tensor_parallel.preset_model=" +
            ds_semantics::ShowValue(*tpp) +
            ", expert_parallel.preset_model=" + ds_semantics::ShowValue(*epp) +
            "): checked even without AutoTP, and compared exactly (case-sensitive)",
        "remove one of them; only mixtral and deepseek_v2 exist in both preset lists");
  }
  if (folded && f.ep && *f.ep == 1) {
    ctx.Report(
        "ep-fold-needs-ep", f.ep_pointer(),
        "AutoEP+AutoTP folding requires expert_parallel.autoep_size > 1" +
            std::string(f.ep_given ? "" : " (autoep_size is absent and defaults to 1)") +
            ": the ep=1 local-computation path would duplicate routed-token gradients across "
            "TP lanes (" +
            tp_text + ")",
        f.world
            ? "set autoep_size to one of " + DivisorList(*f.world / std::max<int64_t>(f.pp, 1)) +
                  " (above 1), or disable AutoTP"
            : std::string("set autoep_size above 1, or disable AutoTP"));
  }
  if (folded && f.data_before) {
    ctx.Report("ep-fold-data-before", "/use_data_before_expert_parallelism",
               "expert_parallel with use_data_before_expert_parallel_ is not supported with "
               "AutoEP+AutoTP folding (" +
                   tp_text + ")",
               "remove use_data_before_expert_parallelism, or disable AutoTP");
  }
  if (folded && f.zero_stage && *f.zero_stage == 3) {
    const std::string zp =
        v.Has("/zero_optimization/stage") ? "/zero_optimization/stage" : "/zero_optimization";
    ctx.Report(
        "ep-fold-zero3", zp,
        "AutoEP+AutoTP with ZeRO stage 3 is reserved for the separate ZeRO-3 composition lane (" +
            tp_text + ")",
        "use ZeRO stage 0, 1 or 2 with AutoEP+AutoTP folding");
  }
  if (std::string op = OffloadPointer(v); folded && !op.empty()) {
    ctx.Report("ep-fold-offload", op,
               "ZeRO optimizer/parameter offload with AutoEP+AutoTP folding is not validated yet: "
               "DeepSpeed rejects the mere presence of zero_optimization." +
                   op.substr(op.rfind('/') + 1) + " (even with device \"none\") when " + tp_text,
               "remove the offload section(s) entirely, or disable AutoTP");
  }
}

// Ranks of the EP groups as groups._create_expert_and_data_parallel lays them out.
std::vector<std::vector<int64_t>> EpGroups(const EpFacts& f, int64_t w) {
  std::vector<std::vector<int64_t>> groups;
  const int64_t ep = *f.ep, stage = w / f.pp;
  for (int64_t start = 0; start < w; start += stage) {
    if (f.data_before && f.tp <= 1 && f.sp <= 1) {  // path A': EP strided by stage/EP
      const int64_t eps = stage / ep;
      for (int64_t j = 0; j < eps; ++j) {
        groups.emplace_back();
        for (int64_t k = 0; k < ep; ++k) groups.back().push_back(start + j + k * eps);
      }
    } else {  // paths A, B', C: consecutive ranks of the stage
      for (int64_t i = 0; i < stage; i += ep) {
        groups.emplace_back();
        for (int64_t k = 0; k < ep; ++k) groups.back().push_back(start + i + k);
      }
    }
  }
  return groups;
}

void CheckNodes(RuleContext& ctx, const EpFacts& f) {
  auto gpn = ctx.options().gpus_per_node;
  if (!gpn || *gpn < 1 || !f.world || !f.ep || *f.ep <= 1 || f.pp < 1) return;
  const int64_t w = *f.world;
  if (w % f.pp != 0 || (w / f.pp) % *f.ep != 0) return;
  for (const auto& g : EpGroups(f, w)) {
    std::set<int64_t> nodes;
    for (int64_t r : g) nodes.insert(r / *gpn);
    if (nodes.size() < 2) continue;
    std::vector<std::string> ranks;
    for (int64_t r : g) ranks.push_back(std::to_string(r));
    ctx.Report(
        "ep-crosses-nodes", f.ep_pointer(),
        "expert-parallel groups of " + std::to_string(*f.ep) + " ranks span " +
            std::to_string(static_cast<int64_t>(nodes.size())) + " nodes (e.g. ranks [" + JoinList(ranks, ", ") +
            "] with " + std::to_string(*gpn) +
            " GPUs per node): the token all-to-all of every MoE layer crosses the inter-node "
            "network",
        "keep autoep_size a divisor of the GPUs per node (" + DivisorList(*gpn) + ")" +
            (f.data_before ? ", or drop use_data_before_expert_parallelism (it strides EP groups)"
                           : ""));
    return;
  }
}

}  // namespace

void CheckFolding(RuleContext& ctx, const EpFacts& f) {
  CheckSpec(ctx, f);
  CheckGlobal(ctx, f);
  if (f.pp > 1) {
    ctx.Report(
        "ep-mpu-unchecked", kSection,
        "with a pipeline (pp_size=" + std::to_string(f.pp) +
            ") the engine takes the pipeline size from the "
            "mpu and also requires the mpu's tensor-model-parallel size to be 1 (\"AutoEP does not "
            "currently support tensor model parallelism from mpu\"); ds-plan cannot see the mpu",
        "make sure the mpu reports a tensor/model-parallel size of 1 and a pipeline size of " +
            std::to_string(f.pp));
  }
  CheckNodes(ctx, f);
}

std::vector<RuleInfo> FoldingRuleInfos() {
  return {
      {"ep-size-invalid", Severity::kError, "expert_parallel",
       "autoep_size or expert_tensor_parallel_size is not a positive integer",
       "build_folding_spec requires world_size, pp_size, autotp_size, autoep_size and "
       "expert_tensor_parallel_size to be Python ints >= 1 (\"must be a positive integer\"). "
       "expert_parallel is read with dict .get, so 4.0, \"4\" and \"auto\" are rejected.",
       "Before the folding release (PR #8064) the sizes went straight into the stage-size "
       "arithmetic and failed there."},
      {"ep-fold-pp-divides-world", Severity::kError, "expert_parallel",
       "pp_size does not divide the world",
       "build_folding_spec: \"pp_size=P must divide world_size=W. Valid pp_size values: [...]\".",
       ""},
      {"ep-fold-autotp-divides-stage", Severity::kError, "expert_parallel",
       "autotp_size does not divide the stage size (AutoEP enabled)",
       "build_folding_spec: stage = W/PP must be divisible by max(autotp_size, 1), else \"Computed "
       "dp "
       "would be non-integral. Valid autotp_size values: [divisors of the stage]\".",
       ""},
      {"ep-fold-width-divides-stage", Severity::kError, "expert_parallel",
       "autoep_size x expert_tensor_parallel_size does not divide the stage size",
       "build_folding_spec: stage % (EP*ETP) must be 0 (\"Computed edp would be non-integral. "
       "Valid "
       "expert-width values: [...]\"). EP groups may span TP lanes: the former dp % (EP*ETP) "
       "subset rule was removed by the folding PR.",
       "Before the folding release (PR #8064): \"autoep_size=E must divide the stage size ... "
       "Valid "
       "autoep_size values\"."},
      {"ep-fold-deepcompile", Severity::kError, "expert_parallel",
       "folding rule a: DeepCompile with TP > 1",
       "validate_folding_global (a): compile.deepcompile with AutoEP and autotp_size > 1 raises "
       "ValueError.",
       ""},
      {"ep-fold-pipeline", Severity::kError, "expert_parallel",
       "folding rule b: pipeline with TP > 1",
       "validate_folding_global (b): AutoEP+AutoTP folding supports pp_size=1 only.", ""},
      {"ep-fold-sequence-parallel", Severity::kError, "expert_parallel",
       "folding rule c: Ulysses SP with TP > 1",
       "validate_folding_global (c): autotp_size > 1 and a sequence-parallel size > 1 are mutually "
       "exclusive with AutoEP. DeepSpeed takes sp_size from the Ulysses mpu or the (dp, sp) mesh; "
       "ds-plan uses the top-level sequence_parallel_size that configures them.",
       ""},
      {"ep-expert-tp", Severity::kError, "expert_parallel",
       "folding rule d: expert_tensor_parallel_size != 1",
       "validate_folding_global (d) rejects any expert_tensor_parallel_size other than 1, with or "
       "without AutoTP (reserved for expert-internal TP). ZeRO-3 with AutoEP asserts the same.",
       "Before the folding release (PR #8064): \"AutoEP only supports "
       "expert_parallel.expert_tensor_parallel_size=1 in this release\"."},
      {"ep-preset-mismatch", Severity::kError, "expert_parallel",
       "folding rule e: tensor_parallel and expert_parallel presets differ",
       "validate_folding_global (e): when both tensor_parallel.preset_model and "
       "expert_parallel.preset_model are set they must be equal (exact string comparison), even "
       "when autotp_size <= 1.",
       "Added by the folding release (PR #8064)."},
      {"ep-fold-needs-ep", Severity::kError, "expert_parallel",
       "folding rule f: TP > 1 with autoep_size 1",
       "validate_folding_global (f): folding requires autoep_size > 1; the ep=1 path would "
       "duplicate routed-token gradients across TP lanes.",
       ""},
      {"ep-fold-data-before", Severity::kError, "expert_parallel",
       "folding rule g: use_data_before_expert_parallelism with TP > 1",
       "validate_folding_global (g): the data-before-expert rank order is not supported with "
       "folding.",
       ""},
      {"ep-fold-zero3", Severity::kError, "expert_parallel",
       "folding rule h: ZeRO stage 3 with TP > 1",
       "validate_folding_global (h): AutoEP+AutoTP with ZeRO-3 is reserved for a separate "
       "composition lane (use stage 0, 1 or 2). It runs before the engine's ZeRO-3 MoE check, "
       "which "
       "would also reject autotp_size > 1.",
       ""},
      {"ep-fold-offload", Severity::kError, "expert_parallel",
       "folding rule i: ZeRO offload with TP > 1",
       "validate_folding_global (i): the engine passes zero_offload_optimizer() is not None / "
       "zero_offload_param() is not None, so the mere presence of offload_optimizer or "
       "offload_param (even {\"device\": \"none\"}) is rejected with autotp_size > 1.",
       ""},
      {"ep-mpu-unchecked", Severity::kNote, "expert_parallel",
       "folding rules j, k: mpu sizes ds-plan cannot see",
       "validate_folding_global (j) requires the mpu's tensor/model-parallel world size to be "
       "None, 1 or autotp_size, and (k) its pipeline size to be None or pp_size; the engine also "
       "rejects any mpu tensor-model-parallel size other than 1. The mpu is a Python object passed "
       "to deepspeed.initialize (a PipelineModule's topology, Megatron), not part of the config, "
       "so "
       "ds-plan notes the requirement whenever a pipeline implies one.",
       ""},
      {"ep-crosses-nodes", Severity::kNote, "expert_parallel", "expert-parallel groups span nodes",
       "EP groups are consecutive ranks of a pipeline stage (strided by stage/EP with "
       "use_data_before_expert_parallelism). A group that spans nodes runs the per-layer token "
       "all-to-all over the inter-node network.",
       ""},
  };
}

}  // namespace dsp::autoep
