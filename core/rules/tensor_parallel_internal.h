// SPDX-License-Identifier: Apache-2.0
// Shared between the AutoTP rule files: tensor_parallel_rules.cc (sizes, presets, the model's
// heads), layer_specs_rules.cc (partition_config.layer_specs as DeepSpeed parses it) and
// layer_specs_model_rules.cc (the specs matched against a --model's parameter names).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/deepspeed_version.h"
#include "core/model/model_spec.h"
#include "core/rules/python_regex.h"
#include "core/rules/rule.h"
#include "core/rules/rule_context.h"

namespace dsp::autotp {

inline constexpr const char* kSection = "/tensor_parallel";
inline constexpr const char* kPartitionConfig = "/tensor_parallel/partition_config";
inline constexpr const char* kLayerSpecs = "/tensor_parallel/partition_config/layer_specs";
inline constexpr const char* kPresetModel = "/tensor_parallel/preset_model";

// Releases where the AutoTP config surface changed (core/config/deepspeed_version.h).
inline constexpr DeepSpeedVersion kPartitionConfigRelease = ds_release::kAutoTpPartitionConfig;
inline constexpr DeepSpeedVersion kGatherOutputRelease = ds_release::kAutoTpGatherOutput;
inline constexpr DeepSpeedVersion kGradAllreduceRelease = ds_release::kAutoTpGradAllreduce;

// AutoTPPresets.get_preset (module_inject/autotp_config.py), looked up lower-cased.
inline const std::vector<std::string>& PresetNames() {
  static const std::vector<std::string> names = {"llama",       "bloom", "chatglm", "mixtral",
                                                 "deepseek_v2", "qwen2", "phi3"};
  return names;
}

// tensor_parallel.preset_model lower-cased when DeepSpeed knows it; nullopt when absent, null or
// unknown (DeepSpeed then silently uses no preset).
std::optional<std::string> KnownPreset(const ConfigView& view);

enum class PartitionKind { kColumn, kRow, kSkip };
std::string_view PartitionKindName(PartitionKind kind);

struct SpecPattern {
  std::string pointer;  // of the pattern string; the preset_model pointer for preset specs
  PythonRegex regex;
  bool digit_blind = false;  // IsIndexBlind: matched through canonical names
};

// One entry of a validated shape: an int (-1 = infer, n > 0 = n equal sub-parameters at
// partition_dim) or, at partition_dim only, the list of uneven sub-parameter sizes.
struct ShapeDim {
  bool nested = false;
  std::vector<int64_t> values;  // one value unless nested
};

// One layer spec in DeepSpeed's matching order: the custom specs, then the preset's when merged.
struct LayerSpec {
  std::string
      pointer;  // /tensor_parallel/partition_config/layer_specs/N, or the preset_model pointer
  std::string label;  // "layer_specs[N]" or "preset 'llama' spec N"
  bool from_preset = false;
  PartitionKind kind = PartitionKind::kColumn;
  bool gather_output = false;
  bool grad_allreduce = false;
  bool has_shape = false;
  std::vector<ShapeDim> shape;  // filled when has_shape and the shape passed the parse-time rules
  int64_t partition_dim = 0;    // resolved (explicit, else 0 for column and 1 for row)
  std::optional<std::vector<std::string>> model_types;  // lower-cased; nullopt = every model
  std::vector<SpecPattern> patterns;                    // the usable ones
};

// Parse-time checks of partition_config.layer_specs (TPLayerSpec / AutoTPConfig.from_dict);
// returns the specs DeepSpeed would build, preset specs appended when they are merged.
std::vector<LayerSpec> CheckLayerSpecs(RuleContext& ctx);
std::vector<RuleInfo> LayerSpecRuleInfos();
// The patterns of one spec object at `pointer` (layer_specs_patterns.cc); usable ones go to `out`.
void CheckSpecPatterns(RuleContext& ctx, const std::string& pointer, const Json& spec,
                       LayerSpec* out);

// The built-in preset's specs (AutoTPPresets), for matching.
std::vector<LayerSpec> PresetSpecs(const std::string& preset, const std::string& pointer);

// transformers' tensor-parallel plan for the model (autotp_hf_plan.cc): what DeepSpeed converts
// when neither preset_model nor partition_config is given. One entry of the merged dict.
struct HfTpPlanEntry {
  const char* pattern;  // "layers.*.self_attn.q_proj"
  const char* style;    // "colwise", "rowwise", "packed_colwise", ...
};
// nullptr when the model type has no plan (DeepSpeed's heuristic parser then decides) or the plan
// is not modelled (multimodal checkpoints).
const std::vector<HfTpPlanEntry>* HfTpPlan(const ModelSpec& model);
// The styles TPPlanConverter.convert rejects at `version`, sorted (empty: the plan converts).
std::vector<std::string> UnsupportedHfStyles(const std::vector<HfTpPlanEntry>& plan,
                                             const DeepSpeedVersion& version);
// TPPlanConverter's regex for a plan pattern ("layers.*.q_proj" -> ".*layers\..*\.q_proj\.weight$").
std::string HfPatternRegex(const std::string& pattern);
// TPPlanConverter.convert: one spec per entry, reported at `pointer`.
std::vector<LayerSpec> HfPlanSpecs(const std::vector<HfTpPlanEntry>& plan,
                                   const std::string& pointer);
// tensor_parallel.partition_config is a non-empty object (get_partition_config_object's test).
bool HasCustomPartitionConfig(const ConfigView& view);
// The built-in preset that fits the model type, for hints.
std::optional<std::string> PresetFor(const ModelSpec& model);

// With --model: patterns against the parameter names, column/row pairing, strict_mode, q/k norms.
void CheckSpecsAgainstModel(RuleContext& ctx, const std::vector<LayerSpec>& specs);
std::vector<RuleInfo> ModelMatchRuleInfos();

// Column/row pairing and the q/k-norm gradient rule (layer_specs_pairing_rules.cc). `winner[i]` is
// the index into `specs` of the spec that claims params[i] (-1: none); `universe[i]` marks the
// modules AutoTP replaces.
void CheckPairing(RuleContext& ctx, const std::vector<LayerSpec>& specs,
                  const std::vector<int>& winner, const std::vector<ParamTensor>& params,
                  const std::vector<bool>& universe);

// Whether the layer-spec findings describe a live failure (AutoTP on) or a latent one: DeepSpeed
// reads partition_config only when autotp_size > 1.
void ReportSpec(RuleContext& ctx, std::string_view id, const std::string& pointer,
                std::string message, std::string hint);

}  // namespace dsp::autotp
