// SPDX-License-Identifier: Apache-2.0
// AutoEP's detection (core/rules/autoep_detection.cc) on every MoE sample model, as DeepSpeed
// 0.19.6 finds their transformers 5 modules (module_inject/auto_ep.py AutoEP.ep_parser,
// auto_ep_presets/registry.py resolve_preset_candidates).
#include "core/rules/autoep_detection.h"

#include <gtest/gtest.h>

#include "tests/core/model/model_test_util.h"

namespace dsp::autoep {
namespace {

using testing::ParsePresetOrDie;

TEST(AutoEpDetectionTest, EachSampleAsItsPresetsFindIt) {
  const struct {
    const char* file;
    Detection auto_detected;  // no preset_model, no patterns
  } cases[] = {
      // A preset lists the model_type (hf_model_types): that preset alone.
      {"mixtral-8x7b.json", Detection::kFound},
      {"qwen3-30b-a3b.json", Detection::kFound},
      {"qwen2-moe-a2.7b.json", Detection::kFound},
      {"deepseek-v2-lite.json", Detection::kFound},
      {"deepseek-v3.json", Detection::kFound},
      // No preset's module pattern fits the blocks.
      {"gpt-oss-20b.json", Detection::kNotFound},
      {"llama-4-scout-17b-16e.json", Detection::kNotFound},
      {"qwen3-vl-30b-a3b.json", Detection::kNotFound},
      // Every preset fits them.
      {"glm-4.5-air.json", Detection::kAmbiguous},
      {"qwen3-next-80b-a3b-thinking.json", Detection::kAmbiguous},
      // Dense: nothing to find.
      {"llama-3-8b.json", Detection::kNotFound},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const ModelSpec m = ParsePresetOrDie(c.file);
    EXPECT_EQ(Detect(m, {}), c.auto_detected);
    EXPECT_EQ(PresetMiss(m).empty(), c.auto_detected != Detection::kNotFound || !m.is_moe());
    // moe_layer_pattern is the user's own detection.
    if (m.is_moe()) EXPECT_EQ(Detect(m, {.moe_layer_pattern = true}), Detection::kFound);
    // A preset_model picks one preset: found, or, where it cannot fit, DeepSpeed's ValueError.
    if (m.is_moe()) {
      EXPECT_EQ(Detect(m, {.preset_model = true}), c.auto_detected == Detection::kNotFound
                                                       ? Detection::kPresetMatchesNone
                                                       : Detection::kFound);
    }
  }
  // On a dense model a preset_model or moe_layer_pattern that finds nothing raises; without them
  // AutoEP only logs.
  const ModelSpec dense = ParsePresetOrDie("llama-3-8b.json");
  EXPECT_EQ(Detect(dense, {.preset_model = true}), Detection::kPresetMatchesNone);
  EXPECT_EQ(Detect(dense, {.moe_layer_pattern = true}), Detection::kPresetMatchesNone);
  EXPECT_EQ(Detect(dense, {.router_pattern = true}), Detection::kNotFound);
  // A router_pattern alone changes every preset alike: gpt_oss's blocks, found through it, are
  // then matched by all five; with a preset_model or moe_layer_pattern one preset decides.
  EXPECT_EQ(Detect(ParsePresetOrDie("gpt-oss-20b.json"), {.router_pattern = true}), Detection::kAmbiguous);
  EXPECT_EQ(Detect(ParsePresetOrDie("gpt-oss-20b.json"), {.preset_model = true, .router_pattern = true}),
            Detection::kFound);
  // It names the router child only: llama4's feed_forward block is still outside the pattern.
  EXPECT_EQ(Detect(ParsePresetOrDie("llama-4-scout-17b-16e.json"), {.router_pattern = true}), Detection::kNotFound);
  EXPECT_EQ(Detect(ParsePresetOrDie("qwen3-vl-30b-a3b.json"), {.preset_model = true, .router_pattern = true}),
            Detection::kPresetMatchesNone);
  EXPECT_EQ(Detect(ParsePresetOrDie("glm-4.5-air.json"), {.router_pattern = true}), Detection::kAmbiguous);
}

}  // namespace
}  // namespace dsp::autoep
