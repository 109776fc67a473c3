// SPDX-License-Identifier: Apache-2.0
// tensor_parallel.partition_config.layer_specs as DeepSpeed parses it (
// AutoTPConfig.from_dict and TPLayerSpec in module_inject/autotp_config.py): partition_type, the
// parse-time shape rules, gather_output/grad_allreduce, patterns as Python regular expressions.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/rules/ds_semantics.h"
#include "core/rules/tensor_parallel_internal.h"
#include "core/util/text.h"

namespace dsp::autotp {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A JSON value as Python would print it in an error message.
using ds_semantics::PyRepr;

// Python's isinstance(v, int): JSON integers and booleans, not 2.0.
std::optional<int64_t> PyInt(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

constexpr const char* kShapeHint =
    "write shape as a list such as [2, -1] (two equal sub-parameters) or [[q, k, v], -1] (uneven "
    "sub-parameters, only at partition_dim); entries are positive integers or -1";

// TPLayerSpec._validate_shape_format: the partition_dim range, then every entry (DeepSpeed stops at
// the first failure; ds-plan reports each, at its own pointer).
void CheckShape(RuleContext& ctx, const std::string& p, const Json& spec, PartitionKind kind) {
  const Json& shape = spec["shape"];
  const std::string sp = PointerJoin(p, "shape");
  if (!shape.is_array()) {
    ReportSpec(ctx, "tp-spec-shape", sp,
               "layer spec shape is " + PyRepr(shape) +
                   ": DeepSpeed raises \"AutoTP shape must be a tuple of ints or a tuple at "
                   "partition_dim\"",
               kShapeHint);
    return;
  }
  int64_t pd = kind == PartitionKind::kColumn ? 0 : 1;
  std::string pd_pointer = sp;
  std::string pd_origin = " (the default for a " + std::string(PartitionKindName(kind)) + " spec)";
  if (spec.contains("partition_dim") && !spec["partition_dim"].is_null()) {
    auto v = PyInt(spec["partition_dim"]);
    pd_pointer = PointerJoin(p, "partition_dim");
    if (!v) {
      ReportSpec(ctx, "tp-spec-partition-dim", pd_pointer,
                 "partition_dim is " + PyRepr(spec["partition_dim"]) +
                     ": it must be an integer index into shape; DeepSpeed fails comparing it",
                 "use an integer between 0 and " + std::to_string(shape.size()) + " - 1");
      return;
    }
    pd = *v;
    pd_origin.clear();
  }
  const int64_t n = static_cast<int64_t>(shape.size());
  if (pd < 0 || pd >= n) {
    ReportSpec(ctx, "tp-spec-partition-dim", pd_pointer,
               "AutoTP partition_dim " + std::to_string(pd) + pd_origin +
                   " is out of range for shape length " + std::to_string(n) +
                   ": DeepSpeed raises ValueError when it parses the layer spec",
               n == 0 ? std::string("give shape at least one dimension")
                      : "use a partition_dim from 0 to " + std::to_string(n - 1));
    // DeepSpeed stops here; the entries are still checked so every problem shows at once.
  }
  for (int64_t idx = 0; idx < n; ++idx) {
    const Json& dim = shape[idx];
    const std::string dp = PointerJoin(sp, std::to_string(idx));
    std::string problem;
    if (dim.is_array()) {
      if (idx != pd) {
        problem = "AutoTP shape nested tuple only allowed at partition_dim=" + std::to_string(pd) +
                  ", got at " + std::to_string(idx);
      } else if (dim.empty()) {
        problem = "AutoTP shape nested tuple cannot be empty";
      } else {
        for (const Json& val : dim) {
          if (val.is_array()) {
            problem = "AutoTP shape supports only 1-level nesting at partition_dim";
            break;
          }
          auto iv = PyInt(val);
          if (!iv || *iv <= 0) {
            problem = "AutoTP nested sub-parameter sizes must be positive integers (got " +
                      PyRepr(val) + ")";
            break;
          }
        }
      }
    } else if (auto iv = PyInt(dim)) {
      if (*iv == 0 || *iv < -1) {
        problem = "AutoTP shape dimensions must be positive integers or -1 (got " +
                  std::to_string(*iv) + ")";
      }
    } else {
      problem = "AutoTP shape must contain only integers or a tuple at partition_dim (got " +
                PyRepr(dim) + (dim.is_number_float() ? ": json.load reads it as a float" : "") +
                ")";
    }
    if (!problem.empty()) {
      ReportSpec(
          ctx, "tp-spec-shape", dp,
          "layer spec shape[" + std::to_string(idx) + "]: DeepSpeed raises \"" + problem + "\"",
          kShapeHint);
    }
  }
}

// One entry of layer_specs; nullopt when DeepSpeed would fail building it.
std::optional<LayerSpec> CheckSpec(RuleContext& ctx, const std::string& p, const Json& spec,
                                   size_t index) {
  if (!spec.is_object()) {
    ReportSpec(ctx, "tp-spec-structure", p,
               "layer_specs[" + std::to_string(index) + "] is " + std::string(spec.type_name()) +
                   ", not an object: DeepSpeed calls .get on every entry and fails",
               "write each layer spec as {\"patterns\": [...], \"partition_type\": \"column\"}");
    return std::nullopt;
  }
  LayerSpec out;
  out.pointer = p;
  out.label = "layer_specs[" + std::to_string(index) + "]";
  bool ok = true;
  if (spec.contains("partition_type")) {
    const Json& t = spec["partition_type"];
    std::string v = t.is_string() ? Lower(t.get<std::string>()) : "";
    if (v == "column" || v == "row" || v == "skip") {
      out.kind = v == "column" ? PartitionKind::kColumn
                               : (v == "row" ? PartitionKind::kRow : PartitionKind::kSkip);
    } else if (t.is_string()) {
      ReportSpec(ctx, "tp-spec-partition-type", PointerJoin(p, "partition_type"),
                 PyRepr(t) + " is not a valid PartitionType: DeepSpeed raises ValueError; the choices "
                             "are column, row and skip (case-insensitive)",
                 "use \"column\", \"row\" or \"skip\"");
      ok = false;
    } else {
      // from_dict converts strings only and passes anything else through; _replace_with_config
      // (auto_tp.py) builds every spec that is neither SKIP nor ROW as column-parallel, and
      // get_partition_dim defaults to 1 for it: harmless on a plain weight, a split along the
      // wrong dimension of a shaped one.
      const bool shaped = spec.contains("shape") && !spec["shape"].is_null();
      std::string message = "partition_type is " + PyRepr(t) +
                            ": DeepSpeed converts only strings, so the layer is built as column-parallel" +
                            (shaped ? std::string(" with the row default partition_dim 1, splitting the shaped "
                                                  "weight along its input dimension")
                                    : std::string(", the default"));
      if (shaped) {
        ReportSpec(ctx, "tp-spec-partition-type", PointerJoin(p, "partition_type"), std::move(message),
                   "use \"column\", \"row\" or \"skip\"");
      } else {
        ctx.ReportAs(Severity::kWarning, "tp-spec-partition-type", PointerJoin(p, "partition_type"),
                     std::move(message), "use \"column\", or drop the key");
      }
      out.kind = PartitionKind::kColumn;
      out.partition_dim = 1;
    }
  }
  if (ok) {
    const bool typed = !spec.contains("partition_type") || spec["partition_type"].is_string();
    if (typed) out.partition_dim = out.kind == PartitionKind::kColumn ? 0 : 1;
    if (spec.contains("partition_dim")) {
      if (auto v = PyInt(spec["partition_dim"])) out.partition_dim = *v;
    }
  }
  if (ok && spec.contains("shape") && !spec["shape"].is_null()) {
    out.has_shape = true;
    size_t before = ctx.diagnostics().size();
    CheckShape(ctx, p, spec, out.kind);
    ok = ctx.diagnostics().size() == before;
    if (ok) {
      for (const Json& d : spec["shape"]) {
        ShapeDim dim;
        dim.nested = d.is_array();
        if (dim.nested) {
          for (const Json& v : d) dim.values.push_back(*PyInt(v));
        } else {
          dim.values.push_back(*PyInt(d));
        }
        out.shape.push_back(std::move(dim));
      }
    }
  }
  auto flag = [&](const char* key) {
    return spec.contains(key) && !spec[key].is_null() && spec[key] != Json(false) &&
           spec[key] != Json(0) && spec[key] != Json("");
  };
  out.gather_output = flag("gather_output");
  out.grad_allreduce = flag("grad_allreduce");
  const DeepSpeedVersion& ver = ctx.version();
  if (spec.contains("gather_output") && ver < kGatherOutputRelease) {
    ctx.Report("tp-spec-key-version", PointerJoin(p, "gather_output"),
               "DeepSpeed " + ver.ToString() + " ignores gather_output (added in " +
                   kGatherOutputRelease.ToString() + ", PR #8146): the column output stays sharded",
               "upgrade DeepSpeed, or target the newer release with --deepspeed-version");
    out.gather_output = false;
  }
  if (spec.contains("grad_allreduce") && ver < kGradAllreduceRelease) {
    ctx.Report("tp-spec-key-version", PointerJoin(p, "grad_allreduce"),
               "DeepSpeed " + ver.ToString() + " ignores grad_allreduce (added in " +
                   kGradAllreduceRelease.ToString() + ", PR #8204): no gradient hook is registered",
               "upgrade DeepSpeed, or target the newer release with --deepspeed-version");
    out.grad_allreduce = false;
  }
  if (ok && out.gather_output && out.kind == PartitionKind::kColumn && out.has_shape) {
    ReportSpec(ctx, "tp-spec-gather-output-shape", PointerJoin(p, "gather_output"),
               "gather_output together with shape: DeepSpeed raises NotImplementedError \"AutoTP "
               "gather_output does not yet support shaped sub-parameter layers\" when the spec "
               "matches a layer",
               "drop gather_output, or split the fused weight so no shape is needed");
  }
  if (out.gather_output && out.kind != PartitionKind::kColumn) {
    ctx.Report("tp-spec-gather-output-ignored", PointerJoin(p, "gather_output"),
               "gather_output only applies to column specs; on a " +
                   std::string(PartitionKindName(out.kind)) + " spec DeepSpeed ignores it",
               "remove gather_output, or make the spec \"partition_type\": \"column\"");
  }
  if (out.grad_allreduce && out.kind != PartitionKind::kSkip) {
    ctx.Report("tp-spec-grad-allreduce-sharded", PointerJoin(p, "grad_allreduce"),
               "grad_allreduce on a " + std::string(PartitionKindName(out.kind)) +
                   " spec: DeepSpeed registers the SUM all-reduce hook on every parameter the spec "
                   "matches, so the gradients of different shards are added together",
               "use grad_allreduce only on \"skip\" specs (replicated parameters applied to "
               "sharded activations, such as Qwen3's q_norm/k_norm)");
  }
  if (spec.contains("model_types") && !spec["model_types"].is_null()) {
    const Json& mt = spec["model_types"];
    if (!mt.is_array()) {
      ctx.Report(
          "tp-spec-model-types", PointerJoin(p, "model_types"),
          "model_types is " + PyRepr(mt) + ", not a list: DeepSpeed checks membership in it" +
              (mt.is_string() ? " character by character, so the spec never applies" : ""),
          "write a list of model types: [" + (mt.is_string() ? mt.dump() : "\"llama\"") + "]");
      ok = false;
    } else if (!mt.empty()) {
      std::vector<std::string> types;
      for (const Json& t : mt)
        types.push_back(Lower(t.is_string() ? t.get<std::string>() : t.dump()));
      out.model_types = types;
    }
  }
  CheckSpecPatterns(ctx, p, spec, &out);
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace

namespace {

// Whether the layer spec `pointer` lies in is restricted by model_types to types other than
// --model's. DeepSpeed raises some spec errors only when the spec is tried on a layer:
// TPLayerSpec.matches returns before re.match for a model_type outside model_types
// (module_inject/autotp_config.py), and a gather_output spec with a shape raises when it wins a
// layer (auto_tp.py _replace_with_config). For another model those are latent.
bool SpecSkipsModel(const RuleContext& ctx, std::string_view id, const std::string& pointer) {
  if (id != "tp-spec-pattern-invalid" && id != "tp-spec-patterns" && id != "tp-spec-gather-output-shape") {
    return false;
  }
  const ModelSpec* m = ctx.options().model;
  const std::string prefix = std::string(kPartitionConfig) + "/layer_specs/";
  if (m == nullptr || !pointer.starts_with(prefix)) return false;
  const size_t end = pointer.find('/', prefix.size());
  const Json* spec = ctx.view().Get(pointer.substr(0, end));
  if (spec == nullptr || !spec->is_object() || !spec->contains("model_types")) return false;
  const Json& types = (*spec)["model_types"];
  if (!types.is_array() || types.empty()) return false;
  for (const Json& t : types) {
    if (Lower(t.is_string() ? t.get<std::string>() : t.dump()) == m->model_type) return false;
  }
  return true;
}

}  // namespace

void ReportSpec(RuleContext& ctx, std::string_view id, const std::string& pointer,
                std::string message, std::string hint) {
  const RuleInfo* info = FindRule(id);
  if (info != nullptr && info->severity == Severity::kError && SpecSkipsModel(ctx, id, pointer)) {
    message += " (latent: this spec's model_types leave out " + ctx.options().model->model_type +
               ", so DeepSpeed never tries it on this model)";
    ctx.ReportAs(Severity::kWarning, id, pointer, std::move(message), std::move(hint));
    return;
  }
  if (ctx.parallel().tp <= 1 && info != nullptr && info->severity == Severity::kError) {
    message +=
        " (latent: DeepSpeed reads partition_config only when tensor_parallel.autotp_size > 1)";
    ctx.ReportAs(Severity::kWarning, id, pointer, std::move(message), std::move(hint));
    return;
  }
  ctx.Report(id, pointer, std::move(message), std::move(hint));
}

std::vector<LayerSpec> CheckLayerSpecs(RuleContext& ctx) {
  std::vector<LayerSpec> specs;
  const Json* pc = ctx.view().Get(kPartitionConfig);
  const bool custom = HasCustomPartitionConfig(ctx.view());
  bool use_default_specs = true;
  if (custom) {
    if (pc->contains("use_default_specs")) {
      const Json& u = (*pc)["use_default_specs"];
      use_default_specs = !(u.is_null() || u == Json(false) || u == Json(0) || u == Json(""));
    }
    if (pc->contains("layer_specs")) {
      const Json& list = (*pc)["layer_specs"];
      if (list.is_array()) {
        for (size_t i = 0; i < list.size(); ++i) {
          auto s = CheckSpec(ctx, PointerJoin(kLayerSpecs, std::to_string(i)), list[i], i);
          if (s) specs.push_back(std::move(*s));
        }
      } else if (!list.is_null()) {
        ReportSpec(ctx, "tp-spec-structure", kLayerSpecs,
                   "layer_specs is " + std::string(list.type_name()) +
                       ", not a list: DeepSpeed iterates it and calls .get on each entry",
                   "write layer_specs as a list of spec objects");
      }
    }
  }
  if (auto preset = KnownPreset(ctx.view()); preset && (!custom || use_default_specs)) {
    for (auto& s : PresetSpecs(*preset, kPresetModel)) specs.push_back(std::move(s));
  }
  return specs;
}

std::vector<RuleInfo> LayerSpecRuleInfos() {
  return {
      {"tp-spec-structure", Severity::kError, "tensor_parallel",
       "layer_specs is not a list of objects",
       "AutoTPConfig.from_dict iterates partition_config.layer_specs and calls .get on every "
       "entry; anything but a list of objects fails when the engine builds AutoTP. Like every "
       "layer-spec error it is reported as a warning while autotp_size <= 1, because DeepSpeed "
       "reads partition_config only when AutoTP runs.",
       ""},
      {"tp-spec-partition-type", Severity::kError, "tensor_parallel",
       "partition_type is not column, row or skip",
       "from_dict lower-cases partition_type and converts it with the PartitionType enum, which "
       "raises ValueError for anything else. Non-string values (null) are not converted at all: "
       "the layer is built column-parallel (a warning), with the row default partition_dim 1, "
       "which splits a shaped weight along the wrong dimension (an error).",
       ""},
      {"tp-spec-shape", Severity::kError, "tensor_parallel", "a layer spec shape DeepSpeed rejects",
       "TPLayerSpec._validate_shape_format runs when the spec is built: shape must be a list; a "
       "nested list is allowed only at partition_dim, one level deep, non-empty, with positive "
       "integers; every other entry is an integer that is -1 or > 0 (0 and values below -1 are "
       "rejected, and so is 2.0, which json.load reads as a float).",
       ""},
      {"tp-spec-partition-dim", Severity::kError, "tensor_parallel",
       "partition_dim outside the spec's shape",
       "With a shape, partition_dim (default 0 for column and 1 for row specs) must satisfy "
       "0 <= partition_dim < len(shape), else ValueError \"AutoTP partition_dim N is out of range "
       "for shape length L\". An empty shape always fails this way.",
       ""},
      {"tp-spec-gather-output-shape", Severity::kError, "tensor_parallel",
       "gather_output together with shape",
       "AutoTP._create_column_parallel_layer raises NotImplementedError (\"gather_output does not "
       "yet support shaped sub-parameter layers\") when a column spec with both matches a layer.",
       ""},
      {"tp-spec-gather-output-ignored", Severity::kWarning, "tensor_parallel",
       "gather_output on a row or skip spec",
       "Only the column-parallel layer constructor reads gather_output; on row and skip specs it "
       "is silently ignored.",
       ""},
      {"tp-spec-grad-allreduce-sharded", Severity::kWarning, "tensor_parallel",
       "grad_allreduce on a column or row spec",
       "AutoTP.register_replicated_grad_hooks adds a SUM all-reduce over the TP group to every "
       "parameter whose matching spec has grad_allreduce, whatever its partition_type. It is meant "
       "for skip specs (HF 'replicated_with_grad_allreduce'); on a sharded weight it adds up the "
       "gradients of different shards.",
       ""},
      {"tp-spec-key-version", Severity::kWarning, "tensor_parallel",
       "a layer-spec key the targeted DeepSpeed does not read",
       "from_dict reads known keys only, so keys from newer releases are silently ignored by "
       "older ones.",
       "gather_output since 0.19.4 (PR #8146); grad_allreduce since 0.19.6 (PR #8204)."},
      {"tp-spec-model-types", Severity::kWarning, "tensor_parallel", "model_types is not a list",
       "TPLayerSpec.matches checks model.config.model_type (lower-cased) for membership in "
       "model_types; a string is searched character by character, so the spec never applies.",
       ""},
      {"tp-spec-no-patterns", Severity::kWarning, "tensor_parallel",
       "a layer spec without patterns",
       "patterns defaults to an empty list, and a spec without patterns matches nothing.", ""},
      {"tp-spec-patterns", Severity::kError, "tensor_parallel", "patterns is not a list of strings",
       "TPLayerSpec.matches runs re.match(pattern, name) for every element of patterns. A string "
       "is iterated character by character (each character becomes a regular expression, '*' "
       "fails, '.' matches everything); a non-string element raises TypeError.",
       ""},
      {"tp-spec-pattern-invalid", Severity::kError, "tensor_parallel",
       "a pattern is not a valid Python regular expression",
       "Patterns are Python `re` expressions, compiled when AutoTP first matches a parameter "
       "name; an invalid one raises re.error during engine initialisation. ds-plan parses the "
       "Python dialect (named groups are (?P<name>...), unknown letter escapes such as \\k are "
       "errors, a brace that is not a quantifier is a literal) and evaluates it with PCRE2.",
       ""},
      {"tp-spec-pattern-unsupported", Severity::kNote, "tensor_parallel",
       "a pattern ds-plan cannot evaluate, or that only Python 3.11+ accepts",
       "A few valid Python constructs have no PCRE2 equivalent (named characters \\N{...}, a "
       "scoped (?a:...), repeat counts above 65535); such patterns are left out of the --model "
       "checks. Atomic groups (?>...) and possessive quantifiers (a*+) are evaluated, but Python's "
       "re accepts them only from 3.11: older Pythons raise re.error.",
       ""},
  };
}

}  // namespace dsp::autotp
