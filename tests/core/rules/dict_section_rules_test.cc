// SPDX-License-Identifier: Apache-2.0
// The dict-read sections' build-time checks: MoQ (compression_training's weight quantization).
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::MessageHas;
using testing::Validate;

// runtime/engine.py _configure_quantization: MoQ in the optimizer step asserts fp16; runtime/config.py
// get_weight_quantization asserts different_groups when weight quantization is enabled.
TEST(DictSectionRulesTest, MoqNeedsFp16AndItsGroups) {
  const std::string groups =
      R"("different_groups": {"wq1": {"params": {"start_bits": 8, "target_bits": 8}, "modules": ["attn"]}})";
  auto bf16 = Validate(R"({"train_batch_size": 8, "bf16": {"enabled": true}, "compression_training": {"weight_quantization":
      {"shared_parameters": {"enabled": true}, )" + groups + "}}}");
  EXPECT_DIAG(bf16, "moq-config", "/compression_training/weight_quantization/shared_parameters/enabled");
  EXPECT_TRUE(MessageHas(bf16, "moq-config", "only supported for FP16"));
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "fp16": {"enabled": true}, "compression_training": {"weight_quantization":
      {"shared_parameters": {"enabled": true}, )" + groups + "}}}"), "moq-config");
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "bf16": {"enabled": true}, "compression_training": {"weight_quantization":
      {"shared_parameters": {"enabled": true, "quantize_weight_in_forward": true}, )" + groups + "}}}"), "moq-config");
  auto no_groups = Validate(R"({"train_batch_size": 8, "fp16": {"enabled": true}, "compression_training": {"weight_quantization":
      {"shared_parameters": {"enabled": true}}}})");
  EXPECT_TRUE(MessageHas(no_groups, "moq-config", "different_groups must be specified"));
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "compression_training": {"weight_quantization":
      {"shared_parameters": {"enabled": false}}}})"), "moq-config");
  // No precision section: the script may enable fp16 (a warning); a placeholder decides nothing.
  auto unset = Validate(R"({"train_batch_size": 8, "compression_training": {"weight_quantization":
      {"shared_parameters": {"enabled": true}, )" + groups + "}}}");
  ASSERT_NE(testing::Find(unset, "moq-config"), nullptr);
  EXPECT_EQ(testing::Find(unset, "moq-config")->severity, Severity::kWarning);
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "fp16": {"enabled": "CONFIG_FP16_ENABLED"}, "compression_training":
      {"weight_quantization": {"shared_parameters": {"enabled": true}, )" + groups + "}}}"), "moq-config");
}

// elasticity/config.py ElasticityConfig.__init__: the two required keys and min_gpus <= max_gpus.
TEST(DictSectionRulesTest, ElasticityChecksItsOwnSection) {
  auto missing = Validate(R"({"elasticity": {"enabled": true, "micro_batch_sizes": [2, 4]}})");
  EXPECT_TRUE(MessageHas(missing, "elasticity-config", "Elasticity config missing max_train_batch_size"));
  auto swapped = Validate(R"({"elasticity": {"enabled": true, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4],
      "min_gpus": 8, "max_gpus": 4}})");
  EXPECT_DIAG(swapped, "elasticity-config", "/elasticity/max_gpus");
  EXPECT_NO_DIAG(Validate(R"({"elasticity": {"enabled": true, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4],
      "min_gpus": 4, "max_gpus": 8}})"), "elasticity-config");
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "elasticity": {"enabled": false}})"), "elasticity-config");
}

}  // namespace
}  // namespace dsp
