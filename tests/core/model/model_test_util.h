// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the model tests: load a preset from samples/models/ and parse it.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/model/model_spec.h"

namespace dsp::testing {

inline Json LoadModelPreset(const std::string& file) {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/samples/models/" + file);
  EXPECT_TRUE(in.good()) << "cannot open samples/models/" << file;
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

inline ModelSpec ParsePresetOrDie(const std::string& file) {
  Result<ModelSpec> spec = ParseHfConfig(LoadModelPreset(file));
  if (!spec.ok()) {
    ADD_FAILURE() << file << ": " << spec.error().message;
    return ModelSpec{};
  }
  return *spec;
}

inline constexpr const char* kModelPresets[] = {
    "llama-3-8b.json",      "llama-3-70b.json", "mixtral-8x7b.json", "qwen3-30b-a3b.json",
    "qwen2-moe-a2.7b.json", "gpt3-175b.json",   "tiny-llama.json",   "tiny-moe.json",
    "qwen3-8b.json"};

// One published config per family added for 2026 models (samples/models/SOURCES.tsv).
inline constexpr const char* kFamilyPresets[] = {
    "deepseek-v3.json",         "deepseek-v2-lite.json",
    "gpt-oss-20b.json",         "gpt-oss-120b.json",
    "llama-4-scout-17b-16e.json", "llama-4-maverick-17b-128e-instruct.json",
    "qwen3-next-80b-a3b-thinking.json", "qwen3.5-27b.json",
    "qwen3.5-397b-a17b.json",   "phi-3-mini-4k.json",
    "gpt-neox-20b.json",        "pythia-160m.json",
    "falcon-7b.json",           "bloom-176b.json",
    "gemma-2-9b-it.json",       "gemma-3-1b.json",
    "gemma-3-27b.json",         "gpt2.json"};

}  // namespace dsp::testing
