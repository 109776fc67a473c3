// SPDX-License-Identifier: Apache-2.0
// AutoTP layer specs against a --model: which spec claims each parameter (re.match, first spec
// wins, model_types filter), what that means for the column/row pairing DeepSpeed's sharded layers
// rely on, strict_mode, q/k norms, and the build-time shape inference.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/config/package_version.h"
#include "core/model/model_spec.h"
#include "core/rules/tensor_parallel_internal.h"
#include "core/util/text.h"

namespace dsp::autotp {
namespace {

// Which spec claims which parameter: every name against every pattern, through index-canonical
// names (IsIndexBlind) and a per-pattern cache.
class Matcher {
 public:
  Matcher(const std::vector<ParamTensor>& params, const std::vector<LayerSpec>& specs,
          const std::string& model_type)
      : params_(params), specs_(specs), model_type_(model_type) {
    std::map<std::string, size_t> ids;
    canon_of_.reserve(params.size());
    for (const auto& p : params) {
      std::string c = CanonicalIndexName(p.name);
      auto [it, added] = ids.emplace(c, canon_names_.size());
      if (added) {
        canon_names_.push_back(c);
        representatives_.push_back(canon_of_.size());
      }
      canon_of_.push_back(it->second);
    }
    for (const auto& s : specs) {
      offsets_.push_back(cache_.size());
      for (const auto& pat : s.patterns) {
        cache_.emplace_back(pat.digit_blind ? canon_names_.size() : params.size(), int8_t{-1});
      }
    }
  }

  bool Active(size_t s) const {
    const auto& types = specs_[s].model_types;
    if (!types) return true;
    for (const auto& t : *types) {
      if (t == model_type_) return true;
    }
    return false;
  }

  bool PatternMatches(size_t s, size_t k, size_t name) {
    const SpecPattern& p = specs_[s].patterns[k];
    auto& cache = cache_[offsets_[s] + k];
    size_t slot = p.digit_blind ? canon_of_[name] : name;
    if (cache[slot] < 0) {
      cache[slot] =
          p.regex.MatchPrefix(p.digit_blind ? canon_names_[slot] : params_[name].name) ? 1 : 0;
    }
    return cache[slot] == 1;
  }

  bool SpecMatches(size_t s, size_t name) {
    if (!Active(s)) return false;
    for (size_t k = 0; k < specs_[s].patterns.size(); ++k) {
      if (PatternMatches(s, k, name)) return true;
    }
    return false;
  }

  // The first matching spec, as AutoTPConfig.find_matching_spec; -1 when none.
  int Winner(size_t name) {
    for (size_t s = 0; s < specs_.size(); ++s) {
      if (SpecMatches(s, name)) return static_cast<int>(s);
    }
    return -1;
  }

  // The parameters a pattern has to be tried on: one per canonical name when it is index-blind.
  std::vector<size_t> Candidates(const SpecPattern& p) const {
    if (p.digit_blind) return representatives_;
    std::vector<size_t> all(params_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }

  // Some parameter name the pattern matches, or -1.
  int FirstMatch(size_t s, size_t k) {
    for (size_t i : Candidates(specs_[s].patterns[k])) {
      if (PatternMatches(s, k, i)) return static_cast<int>(i);
    }
    return -1;
  }

 private:
  const std::vector<ParamTensor>& params_;
  const std::vector<LayerSpec>& specs_;
  std::string model_type_;
  std::vector<std::string> canon_names_;
  std::vector<size_t> canon_of_;
  std::vector<size_t> representatives_;  // first parameter of each canonical name
  std::vector<size_t> offsets_;
  std::vector<std::vector<int8_t>> cache_;
};

std::string Example(const std::vector<ParamTensor>& params, ParamFamily family) {
  for (const auto& p : params) {
    if (p.family == family && p.shape.size() == 2) return p.name;
  }
  return params.empty() ? "" : params.front().name;
}

// Why a pattern that matches nothing might have been meant to match something.
std::string UnmatchedHint(const SpecPattern& pat, const std::vector<ParamTensor>& params,
                          const std::vector<size_t>& candidates) {
  for (size_t i : candidates) {
    const std::string& name = params[i].name;
    if (name.ends_with(".weight") &&
        pat.regex.MatchPrefix(std::string_view(name).substr(0, name.size() - 7))) {
      return "DeepSpeed matches the parameter name, module name + \".weight\" (e.g. " + name +
             "); a pattern ending at the module name with $ never matches: end it with "
             "\\.weight$ or drop the $";
    }
  }
  if (!pat.regex.source.starts_with(".*")) {  // with a leading .* re.match is already unanchored
    for (size_t i : candidates) {
      if (pat.regex.Search(params[i].name)) {
        return "re.match anchors at the start of the name, so the pattern must match from its "
               "first "
               "character (it would match inside " +
               params[i].name + "): start it with .*";
      }
    }
  }
  return "the model's parameter names look like " + Example(params, ParamFamily::kAttention) +
         " and " + Example(params, ParamFamily::kLmHead);
}

void CheckUnmatched(RuleContext& ctx, Matcher& m, const std::vector<LayerSpec>& specs,
                    const std::vector<ParamTensor>& params, const ModelSpec& model) {
  bool preset_seen = false, preset_matched = false;
  std::string preset_pointer;
  for (size_t s = 0; s < specs.size(); ++s) {
    if (!m.Active(s)) continue;
    for (size_t k = 0; k < specs[s].patterns.size(); ++k) {
      bool matched = m.FirstMatch(s, k) >= 0;
      if (specs[s].from_preset) {
        preset_seen = true;
        preset_pointer = specs[s].pointer;
        preset_matched = preset_matched || matched;
        continue;
      }
      if (matched) continue;
      const SpecPattern& pat = specs[s].patterns[k];
      ctx.Report("tp-spec-pattern-unmatched", pat.pointer,
                 "pattern \"" + pat.regex.source + "\" (" + specs[s].label +
                     ") matches none of the " + std::to_string(params.size()) +
                     " parameter names of this " + model.model_type +
                     " model, so it partitions nothing",
                 UnmatchedHint(pat, params, m.Candidates(pat)));
    }
  }
  if (preset_seen && !preset_matched) {
    ctx.Report("tp-preset-model-mismatch", preset_pointer,
               "tensor_parallel.preset_model \"" + *KnownPreset(ctx.view()) +
                   "\" matches none of this " + model.model_type +
                   " model's parameter names: the preset partitions nothing",
               "pick the preset for this architecture, or write layer_specs");
  }
}

void CheckShadowed(RuleContext& ctx, Matcher& m, const std::vector<LayerSpec>& specs,
                   const std::vector<int>& winner, const std::vector<ParamTensor>& params) {
  for (size_t s = 0; s < specs.size(); ++s) {
    if (specs[s].from_preset || !m.Active(s)) continue;
    int first = -1;
    bool wins = false;
    for (size_t i = 0; i < params.size() && !wins; ++i) {
      if (winner[i] == static_cast<int>(s)) wins = true;
      if (first < 0 && winner[i] >= 0 && m.SpecMatches(s, i)) first = static_cast<int>(i);
    }
    if (wins || first < 0) continue;
    const LayerSpec& by = specs[winner[first]];
    ctx.Report("tp-spec-shadowed", specs[s].pointer,
               specs[s].label + " never applies: every parameter it matches (e.g. " +
                   params[first].name + ") is claimed first by " + by.label + " (" +
                   std::string(PartitionKindName(by.kind)) +
                   "), and DeepSpeed uses the first matching spec",
               "move " + specs[s].label + " before " + by.label + ", or narrow " + by.label +
                   "'s patterns");
  }
}

int64_t Product(const std::vector<int64_t>& v, size_t end) {
  int64_t p = 1;
  for (size_t i = 0; i < end; ++i) p *= v[i];
  return p;
}

// _infer_subparam_logical_shapes (module_inject/layers.py) for a 2-D weight; "" when it fits.
std::string ShapeProblem(const LayerSpec& s, const std::vector<int64_t>& w) {
  const size_t pd = static_cast<size_t>(s.partition_dim);
  const ShapeDim& elem = s.shape[pd];
  std::vector<int64_t> logical(s.shape.size(), -1);  // -1 = to infer
  int64_t subparams = 0;
  int64_t subparam_sum = 0;
  if (elem.nested) {
    for (int64_t v : elem.values) subparam_sum += v;
    logical[pd] = subparam_sum;
  } else if (elem.values[0] > 0) {
    subparams = elem.values[0];
  }
  for (size_t i = 0; i < s.shape.size(); ++i) {
    if (i != pd && s.shape[i].values[0] > 0) logical[i] = s.shape[i].values[0];
  }
  const int64_t numel = Product(w, w.size());
  int64_t known = 1;
  std::vector<size_t> unknown;
  for (size_t i = 0; i < logical.size(); ++i) {
    if (logical[i] < 0) {
      unknown.push_back(i);
    } else {
      known *= logical[i];
    }
  }
  if (unknown.empty()) {
    if (known != numel)
      return "shape product " + std::to_string(known) + " != weight numel " + std::to_string(numel);
  } else if (unknown.size() == 1) {
    if (numel % known != 0)
      return "cannot infer shape for weight with numel " + std::to_string(numel);
    logical[unknown[0]] = numel / known;
  } else if (logical.size() == w.size()) {
    for (size_t i : unknown) logical[i] = w[i];
    if (Product(logical, logical.size()) != numel) {
      return "shape product " + std::to_string(Product(logical, logical.size())) +
             " != weight numel " + std::to_string(numel);
    }
  } else {
    return "shape has multiple inferred dims and is ambiguous for weight";
  }
  if (logical.back() != w.back()) {
    return "shape last dim " + std::to_string(logical.back()) + " must match weight input dim " +
           std::to_string(w.back());
  }
  if (logical.size() < 2) return "shape must include at least one output dimension";
  if (Product(logical, logical.size() - 1) != w.front()) {
    return "output shape product " + std::to_string(Product(logical, logical.size() - 1)) +
           " != weight output dim " + std::to_string(w.front());
  }
  if (subparams > 0 && logical[pd] % subparams != 0) {
    return "partition_dim size " + std::to_string(logical[pd]) +
           " not divisible by sub-param count " + std::to_string(subparams);
  }
  return "";
}

std::string ShapeText(const LayerSpec& s) {
  std::vector<std::string> parts;
  for (const auto& d : s.shape) {
    if (!d.nested) {
      parts.push_back(std::to_string(d.values[0]));
      continue;
    }
    std::vector<std::string> inner;
    for (int64_t v : d.values) inner.push_back(std::to_string(v));
    parts.push_back("[" + JoinList(inner, ", ") + "]");
  }
  return "[" + JoinList(parts, ", ") + "]";
}

}  // namespace

// With neither preset_model nor partition_config, DeepSpeed converts transformers' tp_plan
// (DeepSpeedEngine._apply_autotp_partitioning, runtime/engine.py 0.19.6). Fills `out` with the
// converted specs and returns true when the plan converts; reports the plans TPPlanConverter
// rejects. False when nothing is modelled: releases before PR #7901, transformers before 5.1 (the
// plans differ), types without a plan (the heuristic parser decides).
bool HfPlanSpecsFor(RuleContext& ctx, const ModelSpec& model, std::vector<LayerSpec>* out) {
  if (ctx.version() < ds_release::kAutoTpHfPlan) return false;
  const auto& tf = ctx.options().transformers_version;
  if (tf && *tf < *PackageVersion::Parse("5.1.0")) return false;
  const std::vector<HfTpPlanEntry>* plan = HfTpPlan(model);
  if (plan == nullptr) return false;
  const std::string at = ctx.parallel().autotp_size.present() ? ctx.parallel().autotp_size.pointer
                                                              : std::string(kSection);
  const std::vector<std::string> bad = UnsupportedHfStyles(*plan, ctx.version());
  if (bad.empty()) {
    *out = HfPlanSpecs(*plan, at);
    return true;
  }
  std::vector<std::string> entries, quoted;
  for (const HfTpPlanEntry& e : *plan) {
    if (std::find(bad.begin(), bad.end(), e.style) != bad.end())
      entries.push_back(std::string(e.pattern) + ": " + e.style);
  }
  for (const std::string& b : bad) quoted.push_back("'" + b + "'");
  const std::optional<std::string> preset = PresetFor(model);
  const std::string hint =
      (preset ? "set tensor_parallel.preset_model to \"" + *preset + "\" (validate checks it against "
                "the model), or give"
              : std::string("give")) +
      " tensor_parallel.partition_config.layer_specs for this model; AutoTP then ignores the "
      "transformers plan";
  const std::string what = "with neither tensor_parallel.preset_model nor a partition_config, "
                           "AutoTP converts transformers' tp_plan for " + model.model_type +
                           " (base_model_tp_plan and the lm_head entry), and TPPlanConverter does "
                           "not support " + JoinList(entries, ", ");
  if (ctx.version() >= ds_release::kAutoTpHfPlanStrict) {
    ctx.Report("tp-hf-plan-unsupported", at,
               what + ": deepspeed.initialize raises ValueError \"HuggingFace tp_plan contains "
                      "unsupported partition style(s): [" + JoinList(quoted, ", ") +
                      "]\" (the plan is rejected as a whole)",
               hint);
  } else {
    ctx.ReportAs(Severity::kWarning, "tp-hf-plan-unsupported", at,
                 what + ": DeepSpeed " + ctx.version().ToString() +
                     " drops the plan and falls back to the heuristic AutoTP.tp_parser, which "
                     "shards by module names alone (DeepSpeed 0.19.6 raises ValueError instead)",
                 hint);
  }
  return false;
}

// gpt_oss's self_attn.sinks [N]: a raw per-head parameter AutoTP never shards (it replaces only
// modules with a 2-D weight, AutoTP._replace_module in module_inject/auto_tp.py), so with q/k/v
// column-parallel each rank keeps every head's sink while its attention computes N/TP heads.
void CheckHeadParams(RuleContext& ctx, const std::vector<LayerSpec>& specs,
                     const std::vector<int>& winner, const std::vector<ParamTensor>& params,
                     const ModelSpec& model) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < params.size(); ++i) index[params[i].name] = i;
  for (const ParamTensor& p : params) {
    if (!p.name.ends_with(".sinks")) continue;
    const std::string block = p.name.substr(0, p.name.size() - 6);
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
      auto it = index.find(block + "." + proj + ".weight");
      if (it == index.end() || winner[it->second] < 0) continue;
      const LayerSpec& s = specs[winner[it->second]];
      if (s.kind != PartitionKind::kColumn || s.gather_output) continue;
      const int64_t n = model.num_attention_heads, tp = ctx.parallel().tp;
      ctx.Report(
          "tp-head-params-unsharded", s.pointer,
          s.label + " makes " + it->first + " column-parallel, but " + p.name + " [" +
              std::to_string(n) + "] is a per-head parameter AutoTP never shards (it replaces "
              "only modules with a 2-D weight): each rank keeps all " + std::to_string(n) +
              " sinks while its attention computes " + std::to_string(n / std::max<int64_t>(tp, 1)) +
              " heads, and the attention's torch.cat of scores and sinks fails on the head "
              "dimension",
          "leave self_attn replicated (a \"skip\" spec for its q/k/v/o_proj, first in layer_specs) "
          "and shard only the MLP, or train without AutoTP");
      return;  // one finding: every layer has the same sinks
    }
  }
}

void CheckSpecsAgainstModel(RuleContext& ctx, const std::vector<LayerSpec>& given) {
  const ModelSpec* model = ctx.options().model;
  if (model == nullptr || ctx.parallel().tp <= 1) return;
  const Json* pc = ctx.view().Get(kPartitionConfig);
  const bool custom = HasCustomPartitionConfig(ctx.view());
  std::vector<LayerSpec> hf_specs;
  const bool hf_plan = given.empty() && !custom;
  if (hf_plan && !HfPlanSpecsFor(ctx, *model, &hf_specs)) return;
  const std::vector<LayerSpec>& specs = hf_plan ? hf_specs : given;

  const std::vector<ParamTensor> params = ParameterTensors(*model);
  Matcher m(params, specs, model->model_type);
  // transformers' plan names every architecture of its family: unmatched entries are normal.
  if (!hf_plan) CheckUnmatched(ctx, m, specs, params, *model);

  std::vector<int> winner(params.size());
  for (size_t i = 0; i < params.size(); ++i) winner[i] = m.Winner(i);
  if (!hf_plan) CheckShadowed(ctx, m, specs, winner, params);
  CheckHeadParams(ctx, specs, winner, params, *model);

  // The modules AutoTP replaces: 2-D weights, minus the embedding (sliced separately) and, with
  // AutoEP on, the MoE blocks AutoEP has already replaced (AutoTP skips AutoEP subtrees).
  const bool autoep = ctx.parallel().autoep_enabled && ctx.version() >= ds_release::kAutoEp;
  std::vector<bool> universe(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamTensor& p = params[i];
    bool moe = p.family == ParamFamily::kRouter || p.family == ParamFamily::kRoutedExperts ||
               p.family == ParamFamily::kSharedExperts;
    universe[i] = p.shape.size() == 2 && p.name.ends_with(".weight") &&
                  p.family != ParamFamily::kEmbedding && !(autoep && moe);
  }

  // strict_mode: every replaced module needs a spec.
  if (custom && pc->contains("strict_mode") && (*pc)["strict_mode"] == Json(true)) {
    std::vector<std::string> missing;
    size_t count = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!universe[i] || winner[i] >= 0) continue;
      if (count++ < 3) missing.push_back(params[i].name);
    }
    if (count > 0) {
      ctx.Report(
          "tp-strict-unmatched", PointerJoin(kPartitionConfig, "strict_mode"),
          "strict_mode is on and " + std::to_string(count) + " weight(s) of this " +
              model->model_type + " model match no layer spec (" + JoinList(missing, ", ") +
              (count > missing.size() ? ", ..." : "") +
              "): DeepSpeed raises \"No matching spec for " + missing.front() + "\"",
          "add specs for them (\"partition_type\": \"skip\" keeps a layer replicated), or turn "
          "strict_mode off");
    }
  }

  // Shapes inferred at layer build time.
  std::map<std::string, bool> shape_reported;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!universe[i] || winner[i] < 0) continue;
    const LayerSpec& s = specs[winner[i]];
    if (!s.has_shape || s.shape.empty() || s.kind == PartitionKind::kSkip) continue;
    std::string problem = ShapeProblem(s, params[i].shape);
    if (problem.empty() || shape_reported[s.label]) continue;
    shape_reported[s.label] = true;
    ctx.Report(
        "tp-spec-shape-mismatch", s.from_preset ? s.pointer : PointerJoin(s.pointer, "shape"),
        s.label + " shape " + ShapeText(s) + " does not fit " + params[i].name + " [" +
            std::to_string(params[i].shape[0]) + ", " + std::to_string(params[i].shape[1]) +
            "]: DeepSpeed raises ValueError \"AutoTP layer '" + params[i].name + "' " + problem +
            "\" when it builds the layer",
        "describe the weight's logical layout: the last entry is the input width " +
            std::to_string(params[i].shape[1]) + ", the others multiply to the output width " +
            std::to_string(params[i].shape[0]));
  }

  // An equal three-way split of a fused qkv weight under GQA (the phi3 preset's shape (3, -1)).
  const int64_t q_rows = model->num_attention_heads * model->head_dim;
  const int64_t kv_rows = model->num_key_value_heads * model->head_dim;
  for (size_t i = 0; i < params.size() && model->fused_qkv && kv_rows != q_rows; ++i) {
    const ParamTensor& p = params[i];
    if (!universe[i] || winner[i] < 0 || p.layer != 0) continue;
    if (!p.name.ends_with("qkv_proj.weight") && !p.name.ends_with("query_key_value.weight")) continue;
    const LayerSpec& s = specs[winner[i]];
    if (!s.has_shape || s.shape.empty() || s.kind != PartitionKind::kColumn) continue;
    const ShapeDim& d = s.shape[static_cast<size_t>(s.partition_dim)];
    if (d.nested || d.values.empty() || d.values[0] != 3) continue;
    ctx.Report("tp-fused-qkv-unequal-split", s.from_preset ? s.pointer : PointerJoin(s.pointer, "shape"),
               s.label + " shape " + ShapeText(s) + " cuts " + p.name + " [" +
                   std::to_string(p.shape[0]) + ", " + std::to_string(p.shape[1]) +
                   "] into three equal parts of " + std::to_string(p.shape[0] / 3) +
                   " rows, but its q, k and v blocks are " + std::to_string(q_rows) + ", " +
                   std::to_string(kv_rows) + " and " + std::to_string(kv_rows) +
                   " rows (num_key_value_heads " + std::to_string(model->num_key_value_heads) +
                   " < num_attention_heads " + std::to_string(model->num_attention_heads) +
                   "): every rank gets rows across the q/k/v boundaries and DeepSpeed raises "
                   "nothing",
               "describe the blocks with a layer spec first in layer_specs: \"shape\": [[" +
                   std::to_string(q_rows) + ", " + std::to_string(kv_rows) + ", " +
                   std::to_string(kv_rows) + "], -1]");
    break;
  }

  CheckPairing(ctx, specs, winner, params, universe);
}

}  // namespace dsp::autotp
