// SPDX-License-Identifier: Apache-2.0
// AutoTP (`tensor_parallel`, runtime/tensor_parallel/config.py TPTrainingConfig): the size against the world and the nodes,
// tp.tp_size, presets, settings that only matter once AutoTP runs, and the --model's heads and
// vocabulary. The layer specs live in layer_specs_rules.cc (parse time) and
// layer_specs_model_rules.cc / layer_specs_pairing_rules.cc (against --model).
#include <algorithm>
#include <cmath>
#include <cctype>
#include <numeric>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "core/rules/ds_semantics.h"
#include "core/rules/rule_sets.h"
#include "core/rules/tensor_parallel_internal.h"
#include "core/util/text.h"

namespace dsp {
namespace autotp {

std::optional<std::string> KnownPreset(const ConfigView& view) {
  const Json* p = view.Get(kPresetModel);
  if (p == nullptr || !p->is_string()) return std::nullopt;
  std::string name = p->get<std::string>();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const auto& names = PresetNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
  return name;
}

std::string_view PartitionKindName(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::kColumn:
      return "column";
    case PartitionKind::kRow:
      return "row";
    case PartitionKind::kSkip:
      return "skip";
  }
  return "column";
}

}  // namespace autotp

namespace {

using autotp::kPartitionConfig;
using autotp::kPresetModel;

bool Truthy(const Json* v) {
  return v != nullptr && !(v->is_null() || *v == Json(false) || *v == Json(0) || *v == Json("") ||
                           ((v->is_object() || v->is_array()) && v->empty()));
}


// TP values that divide every count given (0 entries ignored).
std::string CommonDivisors(std::vector<int64_t> counts) {
  int64_t g = 0;
  for (int64_t c : counts) {
    if (c > 0) g = std::gcd(g, c);
  }
  return g > 0 ? DivisorList(g) : "";
}

void CheckSizes(RuleContext& ctx) {
  const ParallelConfig& pc = ctx.parallel();
  const ConfigView& v = ctx.view();
  const int64_t tp = pc.tp;
  const bool autoep = pc.autoep_enabled && ctx.version() >= ds_release::kAutoEp;

  // AutoEP validates the TP size first (build_folding_spec), so its rules report it then.
  if (tp > 1 && ctx.world() && *ctx.world() % tp != 0 && !autoep) {
    const int64_t w = *ctx.world();
    ctx.Report(
        "tp-world-divisibility", pc.autotp_size.pointer,
        "tensor_parallel.autotp_size=" + std::to_string(tp) + " does not divide the world size " + std::to_string(w) +
            ": DeepSpeed lays the ranks out as a (world/TP, TP) device mesh and fails creating "
            "it (\"" +
            std::to_string(w) + " is not divisible by " + std::to_string(tp) + "\")",
        "use an autotp_size that divides " + std::to_string(w) + ": " + DivisorList(w));
  }

  for (const char* p :
       {"/tensor_parallel/tp/tp_size", "/tensor_parallel/tensor_parallel/tp_size"}) {
    auto s = v.Int(p);
    if (!s.present() || tp <= 1 || s.value == 1 || s.value == tp) continue;
    ctx.Report("tp-size-mismatch", p,
               "tensor_parallel.tp.tp_size (" + std::to_string(s.value) +
                   ") does not match "
                   "tensor_parallel.autotp_size (" +
                   std::to_string(tp) +
                   "): DeepSpeed raises ValueError when it "
                   "applies AutoTP",
               "remove tp.tp_size (it is set from autotp_size), or set it to 1 or " + std::to_string(tp));
  }

  auto gpn = ctx.options().gpus_per_node;
  bool crosses = gpn && *gpn > 0 && tp > 1 && (tp > *gpn || *gpn % tp != 0);
  if (crosses && ctx.world()) {
    // Groups are [k*TP, (k+1)*TP); with a known world only the groups that exist count.
    crosses = false;
    for (int64_t start = 0; start + tp <= *ctx.world() && !crosses; start += tp) {
      crosses = start / *gpn != (start + tp - 1) / *gpn;
    }
  }
  if (crosses) {
    std::string why = tp > *gpn ? "each TP group of " + std::to_string(tp) + " ranks spans " +
                                      std::to_string((tp + *gpn - 1) / *gpn) + " nodes of " + std::to_string(*gpn) + " GPUs"
                                : std::to_string(*gpn) + " GPUs per node is not a multiple of " + std::to_string(tp) +
                                      ", so some TP groups straddle two nodes";
    ctx.Report("tp-crosses-nodes", pc.autotp_size.pointer,
               "tensor-parallel groups are contiguous ranks and " + why +
                   ": AutoTP all-reduces activations in every layer, forward and backward, and "
                   "over the inter-node network that is usually the bottleneck",
               "keep autotp_size a divisor of the GPUs per node: " + DivisorList(*gpn));
  }
}

void CheckPresetsAndSettings(RuleContext& ctx) {
  const ConfigView& v = ctx.view();
  const int64_t tp = ctx.parallel().tp;
  const Json* preset = v.Get(kPresetModel);
  const Json* pconf = v.Get(kPartitionConfig);
  const bool custom = autotp::HasCustomPartitionConfig(v);
  auto known = autotp::KnownPreset(v);

  if (ctx.version() < autotp::kPartitionConfigRelease) {
    for (const char* p : {kPresetModel, kPartitionConfig}) {
      if (!v.Has(p)) continue;
      ctx.ReportKey("tp-key-version", p,
                    "DeepSpeed " + ctx.version().ToString() + " does not know tensor_parallel." +
                        DottedName(p).substr(16) + " (added in " +
                        autotp::kPartitionConfigRelease.ToString() +
                        ", PR #7806): its pydantic "
                        "section rejects the key (\"Extra inputs are not permitted\")",
                    "remove it, or upgrade DeepSpeed");
    }
  }

  if (preset != nullptr && preset->is_string() && !known) {
    std::string name = preset->get<std::string>();
    std::string extra;
    for (const char* ep : {"qwen3_moe", "qwen3_5_moe", "deepseek_v3"}) {
      if (name == ep)
        extra = " (\"" + name + "\" is an AutoEP preset: expert_parallel.preset_model)";
    }
    std::string close = ClosestMatch(name, autotp::PresetNames());
    ctx.Report(
        "tp-unknown-preset", kPresetModel,
        "tensor_parallel.preset_model \"" + name + "\" is not an AutoTP preset" + extra +
            ": DeepSpeed silently ignores unknown presets and partitions with partition_config, "
            "the model's HF tp_plan or its heuristics instead",
        (close.empty() ? std::string() : "did you mean \"" + close + "\"? ") +
            "AutoTP presets (case-insensitive): " + JoinList(autotp::PresetNames(), ", "));
  }

  if (custom) {
    const Json* use_default =
        pconf->contains("use_default_specs") ? &(*pconf)["use_default_specs"] : nullptr;
    if (known && use_default != nullptr && !Truthy(use_default)) {
      ctx.Report(
          "tp-preset-ignored", PointerJoin(kPartitionConfig, "use_default_specs"),
          "partition_config.use_default_specs is false, so the \"" + *known +
              "\" preset's layer specs are dropped and only the custom layer_specs apply",
          "set use_default_specs to true to append the preset's specs, or remove preset_model");
    }
    if (!known && use_default != nullptr && Truthy(use_default)) {
      ctx.Report(
          "tp-default-specs-without-preset", PointerJoin(kPartitionConfig, "use_default_specs"),
          "use_default_specs only merges the specs of tensor_parallel.preset_model, and no "
          "known preset is set: only the custom layer_specs apply and every other layer stays "
          "replicated",
          "set tensor_parallel.preset_model to one of " + JoinList(autotp::PresetNames(), ", ") +
              ", or drop use_default_specs");
    }
    const Json* specs = pconf->contains("layer_specs") ? &(*pconf)["layer_specs"] : nullptr;
    bool has_specs = specs != nullptr && specs->is_array() && !specs->empty();
    bool preset_merged = known && (use_default == nullptr || Truthy(use_default));
    if (tp > 1 && !has_specs && !preset_merged) {
      ctx.Report("tp-empty-partition-config", kPartitionConfig,
                 "partition_config has no layer_specs and no preset specs are merged, yet it takes "
                 "priority over the model's HF tp_plan and DeepSpeed's heuristics: AutoTP "
                 "partitions nothing and all " +
                     std::to_string(tp) + " ranks of a TP group hold the whole model",
                 "add layer_specs, set a preset_model (with use_default_specs true), or remove "
                 "partition_config");
    }
  }

  if (tp <= 1) {
    std::vector<std::string> ignored;
    std::string first;
    auto note = [&](const std::string& p) {
      ignored.push_back(DottedName(p));
      if (first.empty()) first = p;
    };
    if (preset != nullptr && !preset->is_null()) note(kPresetModel);
    if (custom) note(kPartitionConfig);
    for (const char* p :
         {"/tensor_parallel/tp/tp_size", "/tensor_parallel/tensor_parallel/tp_size"}) {
      if (v.Int(p).or_default(1) > 1) note(p);
    }
    if (v.Bool("/tensor_parallel/tp_overlap_comm").or_default(false))
      note("/tensor_parallel/tp_overlap_comm");
    if (!ignored.empty()) {
      ctx.Report(
          "tp-settings-without-autotp", first,
          JoinList(ignored) + (ignored.size() > 1 ? " are" : " is") +
              " set but tensor_parallel.autotp_size is " +
              (ctx.parallel().autotp_size.present() ? std::to_string(ctx.parallel().autotp_size.value)
                                                    : std::string("not set (default 0)")) +
              ": the engine applies AutoTP only when autotp_size > 1, so DeepSpeed ignores " +
              (ignored.size() > 1 ? "them" : "it"),
          "set tensor_parallel.autotp_size to the tensor-parallel degree, or remove these keys");
    }
  }
}

void CheckTpModel(RuleContext& ctx) {
  const ModelSpec* m = ctx.options().model;
  const int64_t tp = ctx.parallel().tp;
  if (m == nullptr || tp <= 1) return;
  const std::string& at = ctx.parallel().autotp_size.pointer;
  const int64_t kv = m->num_key_value_heads;
  const std::string valid = CommonDivisors({m->num_attention_heads, kv});
  if (kv > 0 && tp > kv) {
    ctx.Report(
        "tp-exceeds-kv-heads", at,
        "AutoTP: autotp_size (" + std::to_string(tp) + ") exceeds the model's key-value head count (" + std::to_string(kv) +
            "); ranks beyond the head count hold no attention shard and attention throughput "
            "will not scale past that point (DeepSpeed logs this as a warning)",
        "autotp_size values that split the " + std::to_string(m->num_attention_heads) + " query and " + std::to_string(kv) +
            " key-value heads evenly: " + valid);
  } else if (kv > 0 && kv % tp != 0) {
    int64_t hi = kv / tp + 1, lo = kv / tp, n_hi = kv % tp;
    ctx.Report("tp-uneven-heads", at,
               "the model's " + std::to_string(kv) + " key-value heads do not split evenly over autotp_size=" +
                   std::to_string(tp) + ": DeepSpeed shards attention on key-value head boundaries, so " +
                   (n_hi == 1 ? std::string("rank 0 gets ") : "ranks 0-" + std::to_string(n_hi - 1) + " get ") +
                   std::to_string(hi) + " key-value heads (" + std::to_string(hi * m->num_attention_heads / kv) +
                   " query heads) and the others " + std::to_string(lo) +
                   ", and every layer waits for the busiest rank",
               "autotp_size values that split the heads evenly: " + valid);
  }
  // Models DeepSpeed's training AutoTP cannot partition (0.19.6, module_inject/auto_tp.py).
  if (m->family == ModelFamily::kGpt2) {
    ctx.Report("tp-model-unsupported", at,
               "AutoTP cannot partition this gpt2 model: the training path lists gpt2 as "
               "unsupported (AutoTP.supported, an assertion in tp_parser) and replaces only "
               "nn.Linear, while GPT-2's c_attn/c_proj/c_fc are Conv1D layers storing [in, out] "
               "weights that a layer_specs entry would split along the wrong dimension",
               "train gpt2 without AutoTP (autotp_size 1); ZeRO or data parallelism covers a "
               "model of its size");
  } else if (m->family == ModelFamily::kGptOss) {
    const ConfigView& v = ctx.view();
    if (!autotp::HasCustomPartitionConfig(v) && v.Get(kPresetModel) == nullptr) {
      ctx.Report("tp-model-unsupported", at,
                 "AutoTP cannot partition this gpt_oss model as configured: without a "
                 "partition_config or preset it converts transformers' tp_plan, whose gpt_oss "
                 "entries use styles TPPlanConverter does not support (local_rowwise, gather, "
                 "ep_router, grouped_gemm), and DeepSpeed raises ValueError; and the per-head "
                 "self_attn.sinks [" + std::to_string(m->num_attention_heads) + "] is a raw parameter AutoTP "
                 "never shards, so splitting q/k/v makes the attention's cat of scores and sinks "
                 "fail",
                 "give layer_specs that leave self_attn replicated (\"partition_type\": "
                 "\"skip\") if the MLP alone should split, or train without AutoTP");
    }
  }
  if (m->vocab_size > 0 && m->vocab_size % tp != 0) {
    ctx.Report("tp-uneven-vocab", at,
               "vocab_size " + std::to_string(m->vocab_size) + " is not a multiple of autotp_size=" + std::to_string(tp) +
                   ": where the vocabulary is split (a column lm_head, e.g. from the HF tp_plan) "
                   "the shards are uneven (" +
                   std::to_string(m->vocab_size / tp + 1) + " vs " + std::to_string(m->vocab_size / tp) + " rows)",
               "pad the vocabulary to a multiple of " + std::to_string(tp) +
                   " (often 64 x TP), or ignore if the "
                   "lm_head stays row-parallel or replicated");
  }
}

}  // namespace

// TPTrainingConfig.dtype (runtime/tensor_parallel/config.py, 0.19.6) is a bare torch.dtype with no
// validator: pydantic takes only a real torch.dtype, which JSON cannot express, and "auto" only
// because DeepSpeedConfigModel drops "auto" values first (the default torch.float16 applies).
void CheckDtype(RuleContext& ctx) {
  const std::string ptr = std::string(autotp::kSection) + "/dtype";
  const Json* dtype = ctx.view().Get(ptr);
  if (dtype == nullptr || (dtype->is_string() && *dtype == "auto")) return;
  ctx.Report("tp-dtype-not-settable", ptr,
             "tensor_parallel.dtype is " + ds_semantics::ShowValue(*dtype) +
                 ": the field is a torch.dtype with no string conversion, so pydantic rejects every JSON "
                 "value (\"Input should be an instance of dtype\") and deepspeed.initialize fails",
             "remove tensor_parallel.dtype (or write \"auto\"): AutoTP training follows the model's dtype and "
             "the bf16/fp16 sections");
}

// TPTrainingConfig's aliased fields (runtime/tensor_parallel/config.py: tensor_parallel alias "tp",
// replace_with_kernel_inject alias "kernel_inject"; populate_by_name): given both, pydantic reads
// the alias and rejects the field name as an extra input.
void CheckTpAlias(RuleContext& ctx) {
  const std::string base = autotp::kSection;
  for (const auto& [name, alias] : {std::pair<std::string, std::string>{"tensor_parallel", "tp"},
                                    {"replace_with_kernel_inject", "kernel_inject"}}) {
    if (ctx.view().Get(base + "/" + alias) == nullptr || ctx.view().Get(base + "/" + name) == nullptr) continue;
    ctx.ReportKey("tp-alias-and-name", base + "/" + name,
                  "tensor_parallel gives both " + name + " and its alias " + alias + ": pydantic takes " + alias +
                      " and rejects " + name + " as an extra input (\"Extra inputs are not permitted\"), so "
                      "DeepSpeed refuses to start",
                  "keep one spelling: remove tensor_parallel." + name + " or tensor_parallel." + alias);
  }
}

// From PR #7806 (0.18.6) deepspeed/__init__.py initialize compares the raw autotp_size with 0
// before the config model reads it (`if autotp_size and autotp_size > 0`): a non-empty string
// other than "auto" (reported with the consumers' "auto" handling), list or object raises
// TypeError, where pydantic would have coerced "2" (the schema's warning, which this replaces).
void CheckAutotpSizeType(RuleContext& ctx) {
  if (ctx.version() < ds_release::kAutoTpPartitionConfig) return;
  const std::string pointer = std::string(autotp::kSection) + "/autotp_size";
  const Json* v = ctx.raw().Get(pointer);
  if (v == nullptr) return;
  const bool raises = (v->is_string() && !v->get_ref<const std::string&>().empty() &&
                       v->get_ref<const std::string&>() != "auto") ||
                      ((v->is_array() || v->is_object()) && !v->empty());
  if (!raises) return;
  ctx.Report("tp-autotp-size-invalid", pointer,
             "tensor_parallel.autotp_size is " + ds_semantics::ShowValue(*v) +
                 ": deepspeed.initialize compares it with 0 before the config is validated "
                 "(deepspeed/__init__.py: `autotp_size > 0`) and raises TypeError",
             "write the size as a JSON integer" +
                 std::string(v->is_string() ? ": \"autotp_size\": " + v->get<std::string>() : ""));
}

RuleSet TensorParallelRules() {
  RuleSet set;
  set.name = "tensor_parallel";
  set.rules = {
      {"tp-autotp-size-invalid", Severity::kError, "tensor_parallel",
       "autotp_size is a string, list or object",
       "deepspeed.initialize (deepspeed/__init__.py, from PR #7806 in 0.18.6) reads "
       "tensor_parallel.autotp_size from the raw config and tests `autotp_size and autotp_size > "
       "0` before pydantic sees it: a non-empty string (\"2\"), list or object raises TypeError. "
       "\"auto\" is reported as auto-unfilled; older releases let pydantic coerce \"2\".",
       ""},
      {"tp-world-divisibility", Severity::kError, "tensor_parallel",
       "autotp_size does not divide the world size",
       "There is no config-time check: the engine builds the AutoTP groups with "
       "groups._init_tp_mesh_device, a (W/TP, TP) DeviceMesh (or new_group fallback asserting "
       "\"W is not divisible by TP\"), which fails when TP does not divide the world. With AutoEP "
       "enabled the stage-size check ep-fold-autotp-divides-stage reports it instead, because "
       "build_folding_spec runs first.",
       ""},
      {"tp-dtype-not-settable", Severity::kError, "tensor_parallel",
       "tensor_parallel.dtype set to anything but \"auto\"",
       "TPTrainingConfig.dtype (runtime/tensor_parallel/config.py, 0.19.6) is annotated torch.dtype "
       "with arbitrary_types_allowed and no validator, so pydantic accepts only a torch.dtype "
       "instance: every JSON value (\"bf16\", \"torch.bfloat16\", null) fails validation. \"auto\" "
       "passes because DeepSpeedConfigModel drops \"auto\" values before validating. (The inference "
       "config's dtype does convert strings; the training one does not.)",
       ""},
      {"tp-alias-and-name", Severity::kError, "tensor_parallel",
       "an aliased tensor_parallel field given under both names",
       "TPTrainingConfig (runtime/tensor_parallel/config.py, 0.19.6) declares tensor_parallel with "
       "the alias tp and replace_with_kernel_inject with the alias kernel_inject, and "
       "populate_by_name: given both, pydantic reads the alias and reports the field name as an "
       "extra input, which extra=\"forbid\" rejects.",
       ""},
      {"tp-size-mismatch", Severity::kError, "tensor_parallel",
       "tensor_parallel.tp.tp_size is neither 1 nor autotp_size",
       "DeepSpeedEngine._apply_autotp_partitioning raises ValueError \"tensor_parallel.tp.tp_size "
       "(a) does not match tensor_parallel.autotp_size (b)\" and otherwise overwrites tp_size with "
       "autotp_size. tp is the alias of tensor_parallel.tensor_parallel.",
       ""},
      {"tp-crosses-nodes", Severity::kWarning, "tensor_parallel",
       "tensor-parallel groups straddle node boundaries",
       "AutoTP groups are contiguous ranks [k*TP, (k+1)*TP). When TP exceeds the GPUs per node, or "
       "does not divide it, a group spans nodes and its per-layer all-reduces cross the inter-node "
       "network. DeepSpeed accepts it; it is a performance trap.",
       ""},
      {"tp-unknown-preset", Severity::kWarning, "tensor_parallel", "an unknown AutoTP preset_model",
       "AutoTPPresets.get_preset looks the name up lower-cased among llama, bloom, chatglm, "
       "mixtral, deepseek_v2, qwen2 and phi3 and returns None for anything else: no error, the "
       "preset is simply not used.",
       ""},
      {"tp-preset-ignored", Severity::kWarning, "tensor_parallel",
       "preset_model with use_default_specs false",
       "TPTrainingConfig.get_partition_config_object merges the preset's specs after the custom "
       "layer_specs only when partition_config.use_default_specs is true; with false the preset is "
       "discarded.",
       ""},
      {"tp-default-specs-without-preset", Severity::kWarning, "tensor_parallel",
       "use_default_specs without a known preset",
       "use_default_specs merges the specs of tensor_parallel.preset_model; it has no built-in "
       "defaults of its own, so without a (known) preset only the custom layer_specs apply.",
       ""},
      {"tp-empty-partition-config", Severity::kWarning, "tensor_parallel",
       "partition_config that partitions nothing",
       "A non-empty partition_config takes priority over the HF tp_plan and the heuristic parser. "
       "With no layer_specs and no merged preset, no layer matches, every layer is skipped and "
       "AutoTP shards nothing.",
       ""},
      {"tp-settings-without-autotp", Severity::kWarning, "tensor_parallel",
       "AutoTP settings while autotp_size <= 1",
       "The engine calls _configure_tensor_parallel only when autotp_size > 1 (0 and 1 both mean "
       "off), so preset_model, partition_config, tp.tp_size and tp_overlap_comm are silently "
       "ignored otherwise.",
       ""},
      {"tp-key-version", Severity::kError, "tensor_parallel",
       "a tensor_parallel key the targeted DeepSpeed rejects",
       "tensor_parallel is a pydantic section with unknown keys forbidden; keys from newer "
       "releases are errors in older ones.",
       "partition_config and preset_model since 0.18.6 (PR #7806)."},
      {"tp-exceeds-kv-heads", Severity::kWarning, "tensor_parallel",
       "autotp_size above the model's key-value heads",
       "_apply_autotp_partitioning logs a warning when autotp_size exceeds num_key_value_heads: "
       "AutoTP shards attention on key-value head boundaries (tp_shard.get_shard_size), so ranks "
       "beyond the head count hold no attention shard.",
       ""},
      {"tp-uneven-heads", Severity::kWarning, "tensor_parallel",
       "key-value heads do not divide evenly over TP",
       "get_shard_size gives rank r kv//TP + (r < kv%TP) key-value heads (with their query "
       "groups): legal, but uneven, and every layer waits for the ranks with more heads.",
       ""},
      {"tp-model-unsupported", Severity::kError, "tensor_parallel",
       "a model DeepSpeed's training AutoTP cannot partition",
       "gpt2: AutoTP.supported lists it and tp_parser asserts; the training engine replaces "
       "nn.Linear and nn.Embedding only (engine.py _apply_autotp_partitioning), never GPT-2's "
       "Conv1D. gpt_oss without partition_config or preset: TPPlanConverter.convert raises "
       "ValueError on its tp_plan styles (local_rowwise, gather, ep_router, grouped_gemm are not "
       "in SUPPORTED_STYLES), and its self_attn.sinks is a raw [num_heads] parameter that "
       "AutoTP._replace_module never splits, so a q/k/v split breaks eager_attention_forward's "
       "cat of scores and sinks.",
       "module_inject/auto_tp.py, module_inject/tp_plan_converter.py (DeepSpeed 0.19.6)."},
      {"tp-uneven-vocab", Severity::kNote, "tensor_parallel", "vocab_size not a multiple of TP",
       "Where the vocabulary dimension is split (a column-parallel lm_head, as the HF tp_plan "
       "does), shards follow get_shard_size and differ by a row; DeepSpeed's default "
       "LmHeadLinearAllreduce splits the hidden dimension instead.",
       ""},
  };
  for (const auto& infos : {autotp::LayerSpecRuleInfos(), autotp::ModelMatchRuleInfos()}) {
    set.rules.insert(set.rules.end(), infos.begin(), infos.end());
  }
  set.check = [](RuleContext& ctx) {
    if (!ctx.view().Get(autotp::kSection)) return;
    CheckSizes(ctx);
    CheckDtype(ctx);
    CheckTpAlias(ctx);
    CheckAutotpSizeType(ctx);
    CheckPresetsAndSettings(ctx);
    CheckTpModel(ctx);
    auto specs = autotp::CheckLayerSpecs(ctx);
    autotp::CheckSpecsAgainstModel(ctx, specs);
  };
  return set;
}

}  // namespace dsp
