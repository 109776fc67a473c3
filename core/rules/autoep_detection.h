// SPDX-License-Identifier: Apache-2.0
// What DeepSpeed's AutoEP detection finds in a model, from the model's module layout under
// transformers 5 and the detection keys of expert_parallel. One answer for validate's rules
// (ep-moe-not-detected, ep-preset-no-moe, ep-detection-ambiguous) and the autoep graph pass.
//
// DeepSpeed 0.19.2 to 0.19.6 (module_inject/auto_ep.py AutoEP.ep_parser,
// auto_ep_presets/registry.py resolve_preset_candidates): preset_model is used alone; otherwise a
// model_type some preset lists in hf_model_types picks that preset; otherwise moe_layer_pattern
// makes a custom preset; otherwise every preset is tried. All five built-in presets fullmatch
// `model\.layers\.\d+\.mlp` with a `gate` router and an `experts` child.
#pragma once

#include <string>

#include "core/config/config_view.h"
#include "core/model/model_spec.h"

namespace dsp::autoep {

enum class Detection {
  kFound,              // the MoE blocks are found once each (or the user's patterns decide)
  kNotFound,           // no preset matches the blocks: "AutoEP: no MoE layers detected in model."
                       // is logged and the run trains without expert parallelism
  kPresetMatchesNone,  // preset_model (or, on a dense model, moe_layer_pattern) matches no
                       // block: ValueError "AutoEP: no MoE layers detected for ..."
  kAmbiguous,          // every preset matches each block: ValueError "AutoEP detection is ambiguous"
};

struct DetectionKeys {
  bool preset_model = false;       // expert_parallel.preset_model is a string
  bool moe_layer_pattern = false;  // expert_parallel.moe_layer_pattern is set
  bool router_pattern = false;     // expert_parallel.router_pattern is set
};

// The keys as DeepSpeed reads them from expert_parallel (a null value is not given).
DetectionKeys ReadDetectionKeys(const ConfigView& config);

Detection Detect(const ModelSpec& m, const DetectionKeys& keys);

// Why no preset matches this model's MoE blocks ("its MoE blocks are `feed_forward`, not
// `mlp`"), or "" when the presets' module pattern fits them.
std::string PresetMiss(const ModelSpec& m);

}  // namespace dsp::autoep
