// SPDX-License-Identifier: Apache-2.0
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Version;
using testing::MessageHas;
using testing::FindAt;

using testing::Validate;

TEST(GradientRulesTest, AllreduceOpValues) {
  auto r = Validate(R"({"gradient_allreduce_op": "avg"})");
  EXPECT_DIAG(r, "gradient-allreduce-op-invalid", "/gradient_allreduce_op");
  EXPECT_TRUE(MessageHas(r, "gradient-allreduce-op-invalid",
                         "Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. Got: 'avg'"));
  EXPECT_TRUE(MessageHas(Validate(R"({"gradient_allreduce_op": null})"), "gradient-allreduce-op-invalid", "Got: None"));
  EXPECT_NO_DIAG(Validate(R"({"gradient_allreduce_op": "SUM"})"), "gradient-allreduce-op-invalid");
  EXPECT_NO_DIAG(Validate(R"({"gradient_allreduce_op": "Mean"})"), "gradient-allreduce-op-invalid");
}

TEST(GradientRulesTest, AllreduceOpBeforeItExisted) {
  auto r = Validate(R"({"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}})", Version("0.19.5"));
  EXPECT_DIAG(r, "gradient-allreduce-op-unavailable", "/gradient_allreduce_op");
  EXPECT_NO_DIAG(r, "gradient-allreduce-sum-unsupported");
  EXPECT_NO_DIAG(Validate(R"({"gradient_allreduce_op": "sum"})", Version("0.19.6")),
                 "gradient-allreduce-op-unavailable");
}

TEST(GradientRulesTest, SumConflicts) {
  auto z3 = Validate(R"({"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}})");
  EXPECT_DIAG(z3, "gradient-allreduce-sum-unsupported", "/gradient_allreduce_op");
  EXPECT_TRUE(MessageHas(z3, "gradient-allreduce-sum-unsupported",
                         "gradient_allreduce_op='sum' is not supported with ZeRO stage 3"));
  EXPECT_TRUE(MessageHas(Validate(R"({"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 2, "zenflow": {}}})"),
                         "gradient-allreduce-sum-unsupported", "ZenFlow"));
  EXPECT_TRUE(MessageHas(Validate(R"({"gradient_allreduce_op": "sum", "compile": {"deepcompile": true}})"),
                         "gradient-allreduce-sum-unsupported", "DeepCompile"));
  EXPECT_NO_DIAG(Validate(R"({"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 2}})"),
                 "gradient-allreduce-sum-unsupported");
  EXPECT_NO_DIAG(Validate(R"({"gradient_allreduce_op": "mean", "zero_optimization": {"stage": 3}})"),
                 "gradient-allreduce-sum-unsupported");
}

TEST(GradientRulesTest, OptimizerMaxGradNorm) {
  auto r = Validate(R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "max_grad_norm": 1.0}}})");
  EXPECT_DIAG(r, "optimizer-max-grad-norm", "/optimizer/params/max_grad_norm");
  EXPECT_TRUE(MessageHas(r, "optimizer-max-grad-norm",
                         "'max_grad_norm' is not supported as an optimizer parameter, please switch to "
                         "using the deepspeed parameter 'gradient_clipping'"));
  EXPECT_NO_DIAG(Validate(R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "gradient_clipping": 1.0})"),
                 "optimizer-max-grad-norm");
}

TEST(GradientRulesTest, ClippingDefaultDependsOnVersion) {
  auto now = Validate(R"({"train_batch_size": 8})");
  const Diagnostic* d = FindAt(now, "gradient-clipping-default", "/gradient_clipping");
  ASSERT_NE(d, nullptr) << testing::Dump(now);
  EXPECT_EQ(d->severity, Severity::kNote);
  EXPECT_NE(d->message.find("clips the global gradient norm to 1.0 by default"), std::string::npos);

  auto at = Validate(R"({"train_batch_size": 8})", Version("0.19.3"));
  EXPECT_TRUE(MessageHas(at, "gradient-clipping-default", "to 1.0 by default"));
  auto old = Validate(R"({"train_batch_size": 8})", Version("0.18.2"));
  EXPECT_TRUE(MessageHas(old, "gradient-clipping-default", "does not clip gradients (default 0.0)"));

  EXPECT_NO_DIAG(Validate(R"({"gradient_clipping": 1.0})"), "gradient-clipping-default");
  EXPECT_NO_DIAG(Validate(R"({"gradient_clipping": "auto"})"), "gradient-clipping-default");
}

TEST(GradientRulesTest, NegativeClipping) {
  EXPECT_DIAG(Validate(R"({"gradient_clipping": -1.0})"), "gradient-clipping-negative", "/gradient_clipping");
  EXPECT_NO_DIAG(Validate(R"({"gradient_clipping": 0.0})"), "gradient-clipping-negative");
}

}  // namespace
}  // namespace dsp
