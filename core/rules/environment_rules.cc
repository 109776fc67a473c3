// SPDX-License-Identifier: Apache-2.0
// Guards on the installed torch and transformers that a config's features reach (DeepSpeed 0.19.6):
// the AutoTP compile pass (compile/init_tp.py), AutoSP (compile/custom_ops/sp_compat.py),
// DeepCompile's pass registration (compile/util.py), ZenFlow (runtime/zenflow/engine.py), Ulysses
// (engine.py) and the AutoEP presets (module_inject/auto_ep_presets/base.py). With
// --torch-version / --transformers-version each guard is checked; without them one note says which
// guards this config is subject to.
#include "core/model/model_spec.h"
#include "core/rules/ds_semantics.h"
#include "core/rules/rule_sets.h"
#include "core/util/text.h"

namespace dsp {
namespace {

using namespace ds_semantics;

struct Guard {
  std::string feature;  // "the AutoTP compile pass"
  std::string pointer;
  bool torch = true;    // else transformers
  PackageVersion min;
  std::optional<PackageVersion> below;  // with `min`: refused in [min, below) (a known-bad range)
  Severity severity = Severity::kError;
  std::string outcome;  // what DeepSpeed does when the guard fails
};

PackageVersion Version(const char* text) { return *PackageVersion::Parse(text); }

// The AutoEP preset whose hf_model_types lists `model_type` (module_inject/auto_ep_presets,
// 0.19.6; qwen3_5_moe also names the multimodal qwen3_5_moe in its unsupported notes), or "".
std::string PresetListing(const std::string& model_type) {
  if (model_type == "mixtral") return "mixtral";
  if (model_type == "qwen3_moe" || model_type == "qwen2_moe") return "qwen3_moe";
  if (model_type == "qwen3_5_moe_text" || model_type == "qwen3_5_moe") return "qwen3_5_moe";
  if (model_type == "deepseek_v2" || model_type == "deepseek_v3") return model_type;
  return "";
}

// AutoEP's presets and transformers. base.py _validate_transformers_version raises for the
// presets whose adapter opts in (qwen3_5_moe >= 5.2.0, deepseek_v2 and deepseek_v3 >= 5.0.0), and
// only for a model_type the preset lists. Every preset but deepseek_v3 also needs transformers
// 5's fused experts (their min_transformers_version): on 4.x the experts are a ModuleList (and
// Mixtral's block is block_sparse_moe), which only deepseek_v3's adapter converts
// (resolve_expert_layout), so detection raises for an explicit preset or a listed model_type
// (auto_ep.py _requires_selected_preset_detection). Without --model the preset is taken to be
// the model's own; without a preset, a model_type no preset lists has no guard.
void AddAutoEpGuard(const RuleContext& ctx, std::vector<Guard>* out) {
  const ConfigView& v = ctx.view();
  const ModelSpec* m = ctx.options().model;
  std::string preset;
  if (auto p = v.String("/expert_parallel/preset_model"); p.present()) preset = p.value;
  if (preset.empty() && m != nullptr) preset = PresetListing(m->model_type);
  if (preset.empty()) return;
  const bool listed = m == nullptr || PresetListing(m->model_type) == preset;
  if (preset == "deepseek_v3" && !listed) return;
  if (listed && (preset == "qwen3_5_moe" || preset == "deepseek_v2" || preset == "deepseek_v3")) {
    const char* min = preset == "qwen3_5_moe" ? "5.2.0" : "5.0.0";
    out->push_back({"the AutoEP preset " + preset, "/expert_parallel", false, Version(min), {}, Severity::kError,
                    "the preset raises ValueError(\"AutoEP preset '" + preset + "' ... requires Transformers >= " +
                        min + "\")"});
    return;
  }
  out->push_back({"the AutoEP preset " + preset, "/expert_parallel", false, Version("5.0.0"), {}, Severity::kError,
                  "transformers 4 builds the experts as a ModuleList (Mixtral's block as block_sparse_moe), "
                  "which the preset does not convert: AutoEP's detection raises ValueError (no MoE layers "
                  "detected, or shape inference failed)"});
}

bool HasPass(const Json* passes, const char* name) {
  if (passes == nullptr || !passes->is_array()) return false;
  for (const auto& p : *passes) {
    if (p == name) return true;
  }
  return false;
}

std::vector<Guard> GuardsFor(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  std::vector<Guard> out;
  bool deepcompile = PydanticBool(v, "/compile/deepcompile", false).value_or(false);
  const Json* passes = v.Get("/compile/passes");
  std::optional<int64_t> stage = EffectiveZeroStage(ctx);
  if (deepcompile) {
    out.push_back({"DeepCompile", "/compile/deepcompile", true, Version("2.6"), {}, Severity::kWarning,
                   "compile/util.py registers DeepCompile's passes only with torch >= 2.6 on CUDA, so the run silently "
                   "uses plain torch.compile"});
    if (HasPass(passes, "autotp") && ctx.parallel().tp > 1 && ctx.version() >= ds_release::kCompileAutoTp) {
      out.push_back({"the AutoTP compile pass", "/compile/passes", true, Version("2.6"), {}, Severity::kError,
                     "init_autotp raises RuntimeError(\"The AutoTP compile pass requires PyTorch >= 2.6, found X.\") "
                     "(pre-releases such as 2.6.0a0 fail too)"});
      bool moe = ctx.options().model == nullptr || ctx.options().model->num_experts > 0;
      if (moe) {
        out.push_back({"the AutoTP compile pass on a batched-MoE model" +
                           std::string(ctx.options().model == nullptr ? " (if --model is one)" : ""),
                       "/compile/passes", false, Version("5.8.0"), Version("5.10.1"),
                       ctx.options().model == nullptr ? Severity::kWarning : Severity::kError,
                       "init_tp.py raises RuntimeError: transformers in [5.8.0, 5.10.1) mutates the MoE routing tensor "
                       "in place in batched_mm_experts_forward (huggingface/transformers#45621), so the pass cannot capture "
                       "a full graph; upgrade to transformers >= 5.10.1"});
      }
    }
    if (HasPass(passes, "autosp") && stage.value_or(0) <= 1) {
      out.push_back({"AutoSP", "/compile/passes", true, Version("2.9"), {}, Severity::kError,
                     "init_autosp raises RuntimeError(\"AutoSP requires PyTorch >= 2.9, found X.\")"});
    }
  }
  if (const Json* z = v.Get("/zero_optimization/zenflow"); z != nullptr && !z->is_null()) {
    out.push_back({"ZenFlow", "/zero_optimization/zenflow", true, Version("2.1"), {}, Severity::kError,
                   "configure_zenflow raises ValueError(\"Please use PyTorch 2.1 or later to enable ZenFlow...\")"});
  }
  if (ctx.parallel().sp > 1) {
    out.push_back({"Ulysses sequence parallelism", "/sequence_parallel_size", true, Version("2.3"), {}, Severity::kWarning,
                   "DeepSpeed warns that Ulysses with PyTorch < 2.3 may hit rank indexing errors"});
  }
  if (DictFlag(v, "/expert_parallel/enabled")) AddAutoEpGuard(ctx, &out);
  return out;
}

void CheckEnvironment(RuleContext& ctx) {
  std::vector<Guard> guards = GuardsFor(ctx);
  std::vector<std::string> unchecked;
  for (const Guard& g : guards) {
    const std::optional<PackageVersion>& installed = g.torch ? ctx.options().torch_version : ctx.options().transformers_version;
    const std::string package = g.torch ? "torch" : "transformers";
    std::string need = g.below ? "not in [" + g.min.text + ", " + g.below->text + ")" : ">= " + g.min.text;
    if (!installed) {
      unchecked.push_back(g.feature + " needs " + package + " " + need);
      continue;
    }
    bool fails = g.below ? (*installed >= g.min && *installed < *g.below) : *installed < g.min;
    if (!fails) continue;
    ctx.ReportAs(g.severity, g.torch ? "env-torch-version" : "env-transformers-version", g.pointer,
                 g.feature + " with " + package + " " + installed->text + ": " + g.outcome,
                 g.below ? "use " + package + " >= " + g.below->text + " (or below " + g.min.text + ")"
                         : "use " + package + " >= " + g.min.text + ", or turn " + g.feature + " off");
  }
  if (!unchecked.empty()) {
    bool torch = false, transformers = false;
    for (const Guard& g : guards) {
      const auto& installed = g.torch ? ctx.options().torch_version : ctx.options().transformers_version;
      if (!installed) (g.torch ? torch : transformers) = true;
    }
    std::string flags = torch && transformers ? "--torch-version and --transformers-version"
                        : torch              ? "--torch-version"
                                             : "--transformers-version";
    ctx.Report("env-guards", guards.front().pointer,
               "this config is subject to version guards: " + JoinList(unchecked) + " (DeepSpeed 0.19.6)",
               "pass " + flags + " to check them against the environment you launch in");
  }
}

}  // namespace

RuleSet EnvironmentRules() {
  RuleSet set;
  set.name = "environment";
  set.rules = {
      {"env-torch-version", Severity::kError, "environment", "a feature the given torch version does not support",
       "With --torch-version: the AutoTP compile pass needs torch >= 2.6 (compile/init_tp.py "
       "AUTOTP_MIN_TORCH_VERSION, pre-releases fail), AutoSP >= 2.9 (compile/custom_ops/sp_compat.py), "
       "ZenFlow >= 2.1 (runtime/zenflow/engine.py); DeepCompile registers its passes only from 2.6 "
       "(compile/util.py: a warning, the run falls back to torch.compile) and Ulysses warns below "
       "2.3 (engine.py). Versions compare as packaging.version does: a local tag (+cu124) is ignored, "
       "a pre-release (2.6.0a0) sorts before the release.",
       ""},
      {"env-transformers-version", Severity::kError, "environment",
       "a feature the given transformers version does not support",
       "With --transformers-version: the AutoTP compile pass refuses transformers in [5.8.0, 5.10.1) "
       "for batched-MoE models (compile/init_tp.py, huggingface/transformers#45621), and the AutoEP "
       "presets need transformers >= 5.0.0 (deepseek_v2, deepseek_v3, mixtral, qwen3_moe) or 5.2.0 "
       "(qwen3_5_moe) (module_inject/auto_ep_presets/base.py).",
       ""},
      {"env-guards", Severity::kNote, "environment", "version guards that apply, when no version is given",
       "One note per file listing the torch/transformers guards the config's features reach, so a CI "
       "job can add --torch-version/--transformers-version for the environment it launches in.",
       ""},
  };
  set.check = CheckEnvironment;
  return set;
}

}  // namespace dsp
