// SPDX-License-Identifier: Apache-2.0
// runtime/engine.py _do_optimizer_sanity_check (0.19.6): model dtype x grad_accum_dtype x ZeRO stage.
#include <gtest/gtest.h>

#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::MessageHas;
using testing::Validate;

std::string Config(const std::string& precision, const std::string& grad, int stage, bool optimizer = true) {
  return R"({"train_batch_size": 8, "gradient_clipping": 1.0, )" + precision + R"("data_types": {"grad_accum_dtype": ")" +
         grad + R"("}, "zero_optimization": {"stage": )" + std::to_string(stage) + "}" +
         (optimizer ? R"(, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}})" : "") + "}";
}

TEST(PrecisionMixRulesTest, StageZeroNeedsMatchingDtypes) {
  auto r = Validate(Config(R"("bf16": {"enabled": true}, )", "fp32", 0));
  EXPECT_DIAG(r, "precision-grad-accum-mix", "/data_types/grad_accum_dtype");
  EXPECT_EQ(Find(r, "precision-grad-accum-mix")->severity, Severity::kError);
  EXPECT_TRUE(MessageHas(r, "precision-grad-accum-mix",
                         "unsupported mix of model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32"));
  EXPECT_DIAG(Validate(Config("", "bf16", 0)), "precision-grad-accum-mix", "/data_types/grad_accum_dtype");
  // Aliases resolve through DtypeEnum: "bfloat16" is bf16.
  EXPECT_NO_DIAG(Validate(Config(R"("bf16": {"enabled": true}, )", "bfloat16", 0)), "precision-grad-accum-mix");
  EXPECT_NO_DIAG(Validate(Config(R"("fp16": {"enabled": true}, )", "half", 0)), "precision-grad-accum-mix");
}

TEST(PrecisionMixRulesTest, ZeroAcceptsEveryMix) {
  for (int stage : {1, 2, 3}) {
    for (const char* g : {"fp32", "fp16", "bf16"}) {
      EXPECT_NO_DIAG(Validate(Config(R"("bf16": {"enabled": true}, )", g, stage)), "precision-grad-accum-mix");
    }
  }
}

TEST(PrecisionMixRulesTest, WithoutAnOptimizerSectionItDependsOnTheScript) {
  auto r = Validate(Config(R"("bf16": {"enabled": true}, )", "fp32", 0, false));
  ASSERT_NE(Find(r, "precision-grad-accum-mix"), nullptr);
  EXPECT_EQ(Find(r, "precision-grad-accum-mix")->severity, Severity::kWarning);
  // BF16_Optimizer(DummyOptim) refuses fp16 accumulation even without an optimizer.
  EXPECT_EQ(Find(Validate(Config(R"("bf16": {"enabled": true}, )", "fp16", 0, false)), "precision-grad-accum-mix")->severity,
            Severity::kError);
}

TEST(DictSectionRulesTest, SectionsThatPopEnabled) {
  for (const char* s : {"amp", "progressive_layer_drop", "curriculum_learning"}) {
    auto r = Validate(std::string(R"({"train_batch_size": 8, ")") + s + R"(": {"theta": 0.5}})");
    EXPECT_DIAG(r, "section-missing-enabled", std::string("/") + s);
    EXPECT_TRUE(MessageHas(r, "section-missing-enabled", "KeyError: 'enabled'"));
  }
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "amp": {"enabled": false, "opt_level": "O1"}})"), "section-missing-enabled");
  auto pld = Validate(R"({"train_batch_size": 8, "progressive_layer_drop": {"enabled": true, "theta": 0.5}})");
  EXPECT_TRUE(MessageHas(pld, "section-missing-enabled", "KeyError: 'gamma'"));
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8, "progressive_layer_drop": {"enabled": true, "theta": 0.5, "gamma": 0.001}})"),
                 "section-missing-enabled");
  EXPECT_DIAG(Validate(R"({"train_batch_size": 8, "amp": {"enabled": "false"}})"), "section-enabled-string", "/amp/enabled");
}

}  // namespace
}  // namespace dsp
