// SPDX-License-Identifier: Apache-2.0
#include "core/rules/autoep_detection.h"

namespace dsp::autoep {

std::string PresetMiss(const ModelSpec& m) {
  if (m.family == ModelFamily::kGptOss) {
    return "its MoE blocks' router is `mlp.router`, not `mlp.gate`";
  }
  if (m.family == ModelFamily::kLlama4) return "its MoE blocks are `feed_forward`, not `mlp`";
  // Qwen3-VL-MoE trains as Qwen3VLMoeForConditionalGeneration (transformers 5 has no causal-LM
  // class for it): its blocks sit under model.language_model.
  if (m.model_type == "qwen3_vl_moe_text") {
    return "its MoE blocks are `model.language_model.layers.N.mlp`, not `model.layers.N.mlp`";
  }
  return "";
}

DetectionKeys ReadDetectionKeys(const ConfigView& config) {
  auto given = [&](const char* key) {
    const Json* j = config.Get(std::string("/expert_parallel/") + key);
    return j != nullptr && !j->is_null();
  };
  const Json* preset = config.Get("/expert_parallel/preset_model");
  return {.preset_model = preset != nullptr && preset->is_string(),
          .moe_layer_pattern = given("moe_layer_pattern"),
          .router_pattern = given("router_pattern")};
}

Detection Detect(const ModelSpec& m, const DetectionKeys& keys) {
  // A dense model has no block to find: with preset_model or moe_layer_pattern that is
  // DeepSpeed's ValueError (auto_ep.py _requires_selected_preset_detection), else a log line.
  if (!m.is_moe()) {
    return keys.preset_model || keys.moe_layer_pattern ? Detection::kPresetMatchesNone : Detection::kNotFound;
  }
  // moe_layer_pattern replaces every preset with the user's own (not second-guessed).
  if (keys.moe_layer_pattern) return Detection::kFound;
  // A model_type no preset lists gets every preset. transformers 5 builds GLM-4.5 (Glm4MoeMoE)
  // and Qwen3-Next (Qwen3NextSparseMoeBlock) as model.layers.N.mlp with a `gate` router and fused
  // 3-D `experts`, which each of the five presets matches; ep_parser then raises
  // (auto_ep.py _raise_if_duplicate_moe_specs). A router_pattern alone changes every preset
  // alike and does not help; preset_model or moe_layer_pattern picks one.
  // gpt_oss's blocks are built the same way but route through `router`: with a router_pattern
  // naming it, every preset matches them too (its fused [E, H, 2F] experts are a layout
  // moe/fused_expert_layout.py classify_fused_gate_up_layout accepts).
  if (!keys.preset_model && m.name_prefix == "model." &&
      (m.model_type == "glm4_moe" || m.model_type == "qwen3_next" ||
       (m.family == ModelFamily::kGptOss && keys.router_pattern))) {
    return Detection::kAmbiguous;
  }
  // A router_pattern names the router child only (registry.py apply_config_overrides): it fixes
  // gpt_oss's `router` (with a preset_model; alone, see above), not a block outside
  // model.layers.N.mlp (llama4's feed_forward, Qwen3-VL-MoE's model.language_model.).
  if (keys.router_pattern && m.family == ModelFamily::kGptOss) return Detection::kFound;
  if (!PresetMiss(m).empty()) {
    // With preset_model, finding nothing is an error (auto_ep.py
    // _requires_selected_preset_detection); these model_types are in no preset's hf_model_types,
    // so without it AutoEP only warns.
    return keys.preset_model ? Detection::kPresetMatchesNone : Detection::kNotFound;
  }
  return Detection::kFound;
}

}  // namespace dsp::autoep
