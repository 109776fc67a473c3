// SPDX-License-Identifier: Apache-2.0
// torch/transformers guards of DeepSpeed 0.19.6: compile/init_tp.py, compile/custom_ops/sp_compat.py,
// runtime/zenflow/engine.py, module_inject/auto_ep_presets/base.py.
#include <gtest/gtest.h>

#include "core/config/package_version.h"
#include "tests/core/model/model_test_util.h"
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::MessageHas;
using testing::Validate;

ValidateOptions Env(const char* torch, const char* transformers = nullptr) {
  ValidateOptions o = testing::World(8);
  if (torch != nullptr) o.torch_version = PackageVersion::Parse(torch);
  if (transformers != nullptr) o.transformers_version = PackageVersion::Parse(transformers);
  return o;
}

const char* kAutoTp =
    R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2}, "compile": {"deepcompile": true, "passes": ["autotp"]}})";

TEST(EnvironmentRulesTest, WithoutVersionsOneNoteNamesTheGuards) {
  auto r = Validate(kAutoTp, testing::World(8));
  const Diagnostic* d = Find(r, "env-guards");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->severity, Severity::kNote);
  EXPECT_NE(d->message.find("torch >= 2.6"), std::string::npos);
  EXPECT_NE(d->hint.find("--torch-version"), std::string::npos);
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8})"), "env-guards");
}

TEST(EnvironmentRulesTest, AutoTpPassNeedsTorch26) {
  EXPECT_DIAG(Validate(kAutoTp, Env("2.5.1")), "env-torch-version", "/compile/passes");
  EXPECT_DIAG(Validate(kAutoTp, Env("2.6.0a0+git1234")), "env-torch-version", "/compile/passes");  // pre-release
  auto ok = Validate(kAutoTp, Env("2.6.0+cu124", "5.10.1"));
  EXPECT_NO_DIAG(ok, "env-torch-version");
  EXPECT_NO_DIAG(ok, "env-transformers-version");
  EXPECT_NO_DIAG(ok, "env-guards");
}

TEST(EnvironmentRulesTest, AutoTpPassRefusesTheBatchedMoeTransformers) {
  auto in_range = Validate(kAutoTp, Env("2.7", "5.9.0"));
  ASSERT_NE(Find(in_range, "env-transformers-version"), nullptr) << testing::Dump(in_range);
  EXPECT_TRUE(MessageHas(in_range, "env-transformers-version", "transformers#45621"));
  EXPECT_NO_DIAG(Validate(kAutoTp, Env("2.7", "5.7.2")), "env-transformers-version");
}

TEST(EnvironmentRulesTest, AutoSpNeedsTorch29AtStageZeroOrOne) {
  const std::string cfg = R"({"train_batch_size": 8, "sequence_parallel_size": 2, "compile": {"deepcompile": true, "passes": ["autosp"]}, "zero_optimization": {"stage": )";
  EXPECT_DIAG(Validate(cfg + "1}}", Env("2.8.0")), "env-torch-version", "/compile/passes");
  // At ZeRO 2/3 the engine falls back to torch.compile before the guard.
  EXPECT_FALSE(MessageHas(Validate(cfg + "3}}", Env("2.8.0")), "env-torch-version", "AutoSP"));
  EXPECT_NO_DIAG(Validate(cfg + "1}}", Env("2.9.1")), "env-torch-version");
}

TEST(EnvironmentRulesTest, ZenFlowNeedsTorch21) {
  const char* cfg = R"({"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}, "zenflow": {}}})";
  EXPECT_DIAG(Validate(cfg, Env("2.0.1")), "env-torch-version", "/zero_optimization/zenflow");
  EXPECT_NO_DIAG(Validate(cfg, Env("2.1.0")), "env-torch-version");
}

// module_inject/auto_ep_presets/base.py _validate_transformers_version: only the presets whose
// adapter opts in (qwen3_5_moe, deepseek_v2, deepseek_v3), and only for a model_type the preset
// lists; the others check nothing but find no block they can convert on transformers 4
// (ModuleList experts; Mixtral's block_sparse_moe), except deepseek_v3's adapter.
TEST(EnvironmentRulesTest, AutoEpPresetsAgainstTheTransformersVersion) {
  auto on = [](const char* preset) {
    return std::string(R"({"train_batch_size": 8, "expert_parallel": {"enabled": true, "autoep_size": 8)") +
           (preset == nullptr ? "" : std::string(R"(, "preset_model": ")") + preset + "\"") + "}}";
  };
  auto at = [](const ModelSpec* m, const char* transformers) {
    ValidateOptions o = Env(nullptr, transformers);
    o.model = m;
    return o;
  };
  const ModelSpec v3 = testing::ParsePresetOrDie("deepseek-v3.json");
  const ModelSpec glm = testing::ParsePresetOrDie("glm-4.5-air.json");
  const ModelSpec mixtral = testing::ParsePresetOrDie("mixtral-8x7b.json");
  const ModelSpec qwen35 = testing::ParsePresetOrDie("qwen3.5-397b-a17b.json");
  EXPECT_NE(Find(Validate(on(nullptr), at(&v3, "4.57.0")), "env-transformers-version"), nullptr);
  EXPECT_NO_DIAG(Validate(on(nullptr), at(&v3, "5.0.0")), "env-transformers-version");
  // deepseek_v3's preset on GLM-4.5: glm4_moe is not in its hf_model_types, so no check.
  EXPECT_NO_DIAG(Validate(on("deepseek_v3"), at(&glm, "4.57.0")), "env-transformers-version");
  EXPECT_NE(Find(Validate(on(nullptr), at(&mixtral, "4.57.0")), "env-transformers-version"), nullptr);
  // qwen3_5_moe needs 5.2.0 on its own model.
  EXPECT_NE(Find(Validate(on(nullptr), at(&qwen35, "5.1.0")), "env-transformers-version"), nullptr);
  EXPECT_NO_DIAG(Validate(on(nullptr), at(&qwen35, "5.2.0")), "env-transformers-version");
  // Another family's preset needs transformers 5's fused experts, whatever the model (only
  // deepseek_v3's adapter converts a ModuleList), but not qwen3_5_moe's 5.2.0 on another model.
  EXPECT_NO_DIAG(Validate(on("qwen3_5_moe"), at(&mixtral, "5.1.0")), "env-transformers-version");
  const ModelSpec qwen3 = testing::ParsePresetOrDie("qwen3-30b-a3b.json");
  EXPECT_NE(Find(Validate(on("mixtral"), at(&qwen3, "4.57.0")), "env-transformers-version"), nullptr);
}

}  // namespace
}  // namespace dsp
