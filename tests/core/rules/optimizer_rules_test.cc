// SPDX-License-Identifier: Apache-2.0
// The optimizer section as DeepSpeed 0.19.6 builds it: runtime/engine.py _do_sanity_check,
// _configure_basic_optimizer and _do_optimizer_sanity_check; constructor signatures from
// deepspeed/ops and torch.optim.
#include <gtest/gtest.h>

#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::MessageHas;
using testing::Validate;

using testing::As;
const ValidateOptions kDs = As(Consumer::kDeepSpeed);

std::string Config(const std::string& optimizer, const std::string& extra = "") {
  return R"({"train_batch_size": 8, "gradient_clipping": 1.0, "optimizer": )" + optimizer + extra + "}";
}

TEST(OptimizerRulesTest, DeepSpeedNamesAreCaseInsensitiveTorchNamesExact) {
  for (const char* ok : {"Adam", "ADAM", "adamw", "AdamW", "Lamb", "OneBitAdam", "Lion", "Muon", "SGD", "RMSprop", "Adafactor"}) {
    auto r = Validate(Config(std::string(R"({"type": ")") + ok + R"(", "params": {"lr": 0.001}})"), kDs);
    EXPECT_NO_DIAG(r, "optimizer-type-unknown");
  }
  auto sgd = Validate(Config(R"({"type": "sgd", "params": {"lr": 0.1}})"), kDs);
  EXPECT_DIAG(sgd, "optimizer-type-unknown", "/optimizer/type");
  EXPECT_EQ(Find(sgd, "optimizer-type-unknown")->severity, Severity::kError);
  EXPECT_NE(Find(sgd, "optimizer-type-unknown")->hint.find("\"SGD\""), std::string::npos);
  auto typo = Validate(Config(R"({"type": "AdamWW"})"), kDs);
  EXPECT_NE(Find(typo, "optimizer-type-unknown")->hint.find("AdamW"), std::string::npos);
}

TEST(OptimizerRulesTest, ContextDecidesTheSeverity) {
  const std::string bad = Config(R"({"type": "sgd"})");
  // No --consumer: a warning that names the condition.
  auto plain = Validate(bad);
  ASSERT_NE(Find(plain, "optimizer-type-unknown"), nullptr);
  EXPECT_EQ(Find(plain, "optimizer-type-unknown")->severity, Severity::kWarning);
  EXPECT_TRUE(MessageHas(plain, "optimizer-type-unknown", "raised only when DeepSpeed builds the optimizer"));
  EXPECT_TRUE(plain.valid());
  // Megatron-DeepSpeed passes its own optimizer: the section is never built.
  EXPECT_NO_DIAG(Validate(bad, As(Consumer::kMegatronDeepSpeed)), "optimizer-type-unknown");
  EXPECT_EQ(Find(Validate(bad, As(Consumer::kHfTrainer)), "optimizer-type-unknown")->severity, Severity::kError);
}

TEST(OptimizerRulesTest, ParamsAreConstructorKeywords) {
  // FusedAdam (no offload) takes set_grad_none; adam_w_mode and torch_adam are popped first.
  auto fused = Validate(Config(R"({"type": "Adam", "params": {"lr": 0.001, "set_grad_none": true, "adam_w_mode": false, "torch_adam": false}})"), kDs);
  EXPECT_NO_DIAG(fused, "optimizer-param-unknown");
  auto typo = Validate(Config(R"({"type": "AdamW", "params": {"lr": 0.001, "weight_decy": 0.1}})"), kDs);
  EXPECT_DIAG(typo, "optimizer-param-unknown", "/optimizer/params/weight_decy");
  EXPECT_NE(Find(typo, "optimizer-param-unknown")->hint.find("did you mean \"weight_decay\""), std::string::npos);
  EXPECT_TRUE(MessageHas(typo, "optimizer-param-unknown", "FusedAdam"));
  // torch_adam / adam_w_mode reach the constructor of any other optimizer.
  EXPECT_DIAG(Validate(Config(R"({"type": "Lamb", "params": {"torch_adam": true}})"), kDs), "optimizer-param-unknown",
              "/optimizer/params/torch_adam");
}

TEST(OptimizerRulesTest, OffloadSwitchesTheClass) {
  const std::string offload = R"(, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}})";
  auto cpu = Validate(Config(R"({"type": "AdamW", "params": {"lr": 0.001, "set_grad_none": true, "adamw_mode": true, "fp32_optimizer_states": false}})", offload), kDs);
  EXPECT_DIAG(cpu, "optimizer-param-unknown", "/optimizer/params/set_grad_none");
  EXPECT_DIAG(cpu, "optimizer-param-unknown", "/optimizer/params/adamw_mode");  // passed by DeepSpeed itself
  EXPECT_TRUE(MessageHas(cpu, "optimizer-param-unknown", "DeepSpeedCPUAdam"));
  EXPECT_EQ(testing::FindAt(cpu, "optimizer-param-unknown", "/optimizer/params/fp32_optimizer_states"), nullptr);
  // Lion: eps is never a parameter; set_grad_none only without offload.
  EXPECT_DIAG(Validate(Config(R"({"type": "Lion", "params": {"eps": 1e-8}})"), kDs), "optimizer-param-unknown",
              "/optimizer/params/eps");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Lion", "params": {"set_grad_none": true}})"), kDs), "optimizer-param-unknown");
  EXPECT_DIAG(Validate(Config(R"({"type": "Lion", "params": {"set_grad_none": true}})", offload), kDs),
              "optimizer-param-unknown", "/optimizer/params/set_grad_none");
  // Adagrad: torch's lr_decay exists only without offload.
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Adagrad", "params": {"lr_decay": 0.01}})"), kDs), "optimizer-param-unknown");
  EXPECT_DIAG(Validate(Config(R"({"type": "Adagrad", "params": {"lr_decay": 0.01}})", offload), kDs),
              "optimizer-param-unknown", "/optimizer/params/lr_decay");
}

TEST(OptimizerRulesTest, MuonDropsUnknownKeys) {
  auto r = Validate(Config(R"({"type": "Muon", "params": {"lr": 0.02, "nesterov": true, "ns_method": "newton"}})"), kDs);
  EXPECT_DIAG(r, "optimizer-param-ignored", "/optimizer/params/nesterov");
  EXPECT_EQ(Find(r, "optimizer-param-ignored")->severity, Severity::kWarning);
  EXPECT_DIAG(r, "optimizer-param-value", "/optimizer/params/ns_method");
  auto z3 = Validate(Config(R"({"type": "muon", "params": {"lr": 0.02}})", R"(, "zero_optimization": {"stage": 3})"), kDs);
  EXPECT_TRUE(MessageHas(z3, "optimizer-param-value", "Muon and reduce scatter cannot be used together"));
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "muon", "params": {"lr": 0.02}})",
                                 R"(, "zero_optimization": {"stage": 3, "reduce_scatter": false})"), kDs),
                 "optimizer-param-value");
}

TEST(OptimizerRulesTest, ValuesTheConstructorsRefuse) {
  // FusedAdam tests amsgrad for truthiness: "false" raises.
  EXPECT_DIAG(Validate(Config(R"({"type": "Adam", "params": {"amsgrad": "false"}})"), kDs), "optimizer-param-value",
              "/optimizer/params/amsgrad");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Adam", "params": {"amsgrad": false}})"), kDs), "optimizer-param-value");
  // torch_adam builds torch.optim.AdamW, which supports amsgrad and checks ranges.
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Adam", "params": {"torch_adam": true, "amsgrad": true}})"), kDs),
                 "optimizer-param-value");
  auto range = Validate(Config(R"({"type": "Adam", "params": {"torch_adam": true, "lr": -1, "betas": [0.9, 1.0]}})"), kDs);
  EXPECT_DIAG(range, "optimizer-param-value", "/optimizer/params/lr");
  EXPECT_DIAG(range, "optimizer-param-value", "/optimizer/params/betas/1");
  EXPECT_DIAG(Validate(Config(R"({"type": "SGD", "params": {"lr": 0.1, "nesterov": true}})"), kDs), "optimizer-param-value",
              "/optimizer/params/nesterov");
  EXPECT_DIAG(Validate(Config(R"({"type": "MuAdam", "params": {"betas": [0.9, 0.95]}})"), kDs), "optimizer-param-value",
              "/optimizer/params");
}

TEST(OptimizerRulesTest, ZeroNeedsATestedOptimizer) {
  const std::string z1 = R"(, "zero_optimization": {"stage": 1})";
  auto lamb = Validate(Config(R"({"type": "Lamb", "params": {"lr": 0.001}})", z1), kDs);
  EXPECT_DIAG(lamb, "optimizer-zero-untested", "/optimizer/type");
  EXPECT_TRUE(MessageHas(lamb, "optimizer-zero-untested", "zero_allow_untested_optimizer"));
  // DeepSpeed tests the flag for truthiness.
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Lamb"})", z1 + R"(, "zero_allow_untested_optimizer": "false")"), kDs),
                 "optimizer-zero-untested");
  for (const char* ok : {"AdamW", "Adagrad", "Lion", "MuAdamW"}) {
    EXPECT_NO_DIAG(Validate(Config(std::string(R"({"type": ")") + ok + R"(", "params": {"lr": 0.001}})", z1), kDs),
                   "optimizer-zero-untested");
  }
  EXPECT_DIAG(Validate(Config(R"({"type": "SGD"})", z1), kDs), "optimizer-zero-untested", "/optimizer/type");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "SGD"})")), "optimizer-zero-untested");  // stage 0
}

TEST(OptimizerRulesTest, LambNeedsDynamicLossScaling) {
  auto r = Validate(Config(R"({"type": "Lamb"})", R"(, "fp16": {"enabled": false, "loss_scale": 1024})"), kDs);
  EXPECT_DIAG(r, "optimizer-lamb-static-loss-scale", "/fp16/loss_scale");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Lamb"})", R"(, "fp16": {"enabled": true, "loss_scale": 0})"), kDs),
                 "optimizer-lamb-static-loss-scale");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "Adam"})", R"(, "fp16": {"enabled": true, "loss_scale": 1024})"), kDs),
                 "optimizer-lamb-static-loss-scale");
}

TEST(OptimizerRulesTest, ParamsWithoutTypeAreIgnored) {
  auto r = Validate(Config(R"({"params": {"lr": 0.001, "max_grad_norm": 1.0}})"));
  EXPECT_DIAG(r, "optimizer-params-without-type", "/optimizer/params");
  EXPECT_NO_DIAG(r, "optimizer-max-grad-norm");
}

}  // namespace
}  // namespace dsp
