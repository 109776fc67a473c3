// SPDX-License-Identifier: Apache-2.0
// The scheduler section as DeepSpeed 0.19.6 builds it: runtime/engine.py _scheduler_from_config
// calls scheduler(optimizer, **params); the constructors are deepspeed/runtime/lr_schedules.py
// and torch.optim.lr_scheduler.
#include <gtest/gtest.h>

#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::MessageHas;
using testing::Validate;

using testing::As;
const ValidateOptions kDs = As(Consumer::kDeepSpeed);

std::string Config(const std::string& scheduler, const std::string& extra = "") {
  return R"({"train_batch_size": 8, "gradient_clipping": 1.0, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "scheduler": )" +
         scheduler + extra + "}";
}

TEST(SchedulerRulesTest, NamesAreExact) {
  for (const char* ok : {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest"}) {
    auto r = Validate(Config(std::string(R"({"type": ")") + ok +
                             R"(", "params": {"total_num_steps": 10000, "cycle_min_lr": 0.0001, "cycle_max_lr": 0.001}})"),
                      kDs);
    EXPECT_NO_DIAG(r, "scheduler-type-unknown");
  }
  auto lower = Validate(Config(R"({"type": "warmuplr", "params": {}})"), kDs);
  EXPECT_DIAG(lower, "scheduler-type-unknown", "/scheduler/type");
  EXPECT_NE(Find(lower, "scheduler-type-unknown")->hint.find("\"WarmupLR\""), std::string::npos);
  EXPECT_TRUE(MessageHas(lower, "scheduler-type-unknown", "DeepSpeed does not recognize LR scheduler warmuplr"));
  EXPECT_DIAG(Validate(Config(R"({"type": "LambdaLR", "params": {}})"), kDs), "scheduler-type-unknown", "/scheduler/type");
}

TEST(SchedulerRulesTest, ParamsAreKeywordArguments) {
  // params is required even when every argument has a default.
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupLR"})"), kDs), "scheduler-params-missing", "/scheduler");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {}})"), kDs), "scheduler-params-missing");
  auto typo = Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_step": 100}})"), kDs);
  EXPECT_DIAG(typo, "scheduler-param-unknown", "/scheduler/params/warmup_num_step");
  EXPECT_NE(Find(typo, "scheduler-param-unknown")->hint.find("did you mean \"warmup_num_steps\""), std::string::npos);
  // WarmupCosineLR takes ratios, not warmup_max_lr; torch's last_epoch is not DeepSpeed's.
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupCosineLR", "params": {"total_num_steps": 100, "warmup_max_lr": 0.001}})"), kDs),
              "scheduler-param-unknown", "/scheduler/params/warmup_max_lr");
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"last_epoch": -1}})"), kDs), "scheduler-param-unknown",
              "/scheduler/params/last_epoch");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "StepLR", "params": {"step_size": 10, "last_epoch": -1}})"), kDs),
                 "scheduler-param-unknown");
}

TEST(SchedulerRulesTest, RequiredParameters) {
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupDecayLR", "params": {"warmup_num_steps": 100}})"), kDs),
              "scheduler-param-missing", "/scheduler/params");
  auto one_cycle = Validate(Config(R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.0001}})"), kDs);
  EXPECT_TRUE(MessageHas(one_cycle, "scheduler-param-missing", "cycle_max_lr"));
  EXPECT_DIAG(Validate(Config(R"({"type": "OneCycleLR", "params": {"max_lr": 0.01}})"), kDs), "scheduler-param-missing",
              "/scheduler/params");
}

TEST(SchedulerRulesTest, WarmupStepsArePositiveIntegersSince0193) {
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": 0}})"), kDs), "scheduler-param-value",
              "/scheduler/params/warmup_num_steps");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": 0}})"), As(Consumer::kDeepSpeed, "0.19.2")),
                 "scheduler-param-value");
  // isinstance(True, int): a boolean passes.
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": true}})"), kDs), "scheduler-param-value");
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": "100"}})"), kDs), "scheduler-param-value",
              "/scheduler/params/warmup_num_steps");
}

TEST(SchedulerRulesTest, FloatWrittenStepsDependOnTheLoader) {
  const std::string cfg = Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": 1e3}})");
  // DeepSpeed reading the file: hjson makes 1e3 the integer 1000.
  EXPECT_NO_DIAG(Validate(cfg, kDs), "scheduler-param-value");
  // The Trainer reads it with json.load: 1000.0, which WarmupLR rejects.
  auto hf = Validate(cfg, As(Consumer::kHfTrainer));
  EXPECT_DIAG(hf, "scheduler-param-value", "/scheduler/params/warmup_num_steps");
  EXPECT_EQ(Find(hf, "scheduler-param-value")->severity, Severity::kError);
  // Unknown launcher: a warning naming the loader.
  auto plain = Validate(cfg);
  ASSERT_NE(Find(plain, "scheduler-param-value"), nullptr);
  EXPECT_EQ(Find(plain, "scheduler-param-value")->severity, Severity::kWarning);
  EXPECT_TRUE(MessageHas(plain, "scheduler-param-value", "json.load"));
}

TEST(SchedulerRulesTest, AutoWarmupUnderTheTrainerIsZero) {
  auto r = Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}})"), As(Consumer::kHfTrainer));
  EXPECT_DIAG(r, "scheduler-param-value", "/scheduler/params/warmup_num_steps");
  EXPECT_EQ(Find(r, "scheduler-param-value")->severity, Severity::kWarning);
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}})"), kDs), "scheduler-param-value");
}

TEST(SchedulerRulesTest, ConstructorChecks) {
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_type": ["log"]}})"), kDs), "scheduler-param-value",
              "/scheduler/params/warmup_type");
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupLR", "params": {"warmup_type": "Linear"}})"), kDs),
              "scheduler-warmup-type-fallback", "/scheduler/params/warmup_type");
  EXPECT_DIAG(Validate(Config(R"({"type": "WarmupDecayLR", "params": {"total_num_steps": 500, "warmup_num_steps": 1000}})"), kDs),
              "scheduler-total-below-warmup", "/scheduler/params/total_num_steps");
  EXPECT_DIAG(Validate(Config(R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.0001, "cycle_max_lr": 0.001, "cycle_first_step_size": 0}})"), kDs),
              "scheduler-param-value", "/scheduler/params/cycle_first_step_size");
  // hjson turns pct_start 1.0 into the int 1, which OneCycleLR's isinstance(float) check refuses.
  auto pct = Validate(Config(R"({"type": "OneCycleLR", "params": {"max_lr": 0.01, "total_steps": 100, "pct_start": 1.0}})"), kDs);
  EXPECT_DIAG(pct, "scheduler-param-value", "/scheduler/params/pct_start");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "OneCycleLR", "params": {"max_lr": 0.01, "total_steps": 100, "pct_start": 0.3}})"), kDs),
                 "scheduler-param-value");
}

TEST(SchedulerRulesTest, OneCycleStepSizesGoThroughFloat) {
  auto cfg = [](const char* v) {
    return Config(std::string(R"({"type": "OneCycle", "params": {"cycle_min_lr": 0.0001, "cycle_max_lr": 0.001, "cycle_first_step_size": )") + v + "}}");
  };
  EXPECT_NO_DIAG(Validate(cfg(R"("100")"), kDs), "scheduler-param-value");  // float("100")
  EXPECT_DIAG(Validate(cfg(R"("abc")"), kDs), "scheduler-param-value", "/scheduler/params/cycle_first_step_size");
  EXPECT_DIAG(Validate(cfg(R"("0")"), kDs), "scheduler-param-value", "/scheduler/params/cycle_first_step_size");
}

TEST(SchedulerRulesTest, WarningsFollowTheContextToo) {
  const std::string cfg = Config(R"({"type": "WarmupLR", "params": {"warmup_type": "Linear"}})");
  EXPECT_DIAG(Validate(cfg), "scheduler-warmup-type-fallback", "/scheduler/params/warmup_type");
  ValidateOptions megatron;
  megatron.consumer = Consumer::kMegatronDeepSpeed;
  EXPECT_NO_DIAG(Validate(cfg, megatron), "scheduler-warmup-type-fallback");
}

TEST(SchedulerRulesTest, WrappedOptimizerIsNamed) {
  auto bf16 = Validate(Config(R"({"type": "StepLR", "params": {"step_size": 10}})", R"(, "bf16": {"enabled": true})"), kDs);
  EXPECT_TRUE(MessageHas(bf16, "scheduler-torch-wrapped-optimizer", "FP16_Optimizer"));
  auto z1 = Validate(Config(R"({"type": "StepLR", "params": {"step_size": 10}})",
                            R"(, "bf16": {"enabled": true}, "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": "fp32"})"),
                     kDs);
  EXPECT_TRUE(MessageHas(z1, "scheduler-torch-wrapped-optimizer", "BF16_Optimizer"));
}

TEST(SchedulerRulesTest, ParamsWithoutTypeAreIgnored) {
  auto r = Validate(R"({"train_batch_size": 8, "scheduler": {"params": {"warmup_num_steps": 0}}})", kDs);
  EXPECT_DIAG(r, "scheduler-params-without-type", "/scheduler/params");
  EXPECT_NO_DIAG(r, "scheduler-param-value");  // never read
}

TEST(SchedulerRulesTest, TorchSchedulersNeedAnUnwrappedOptimizer) {
  const std::string cfg = Config(R"({"type": "StepLR", "params": {"step_size": 10}})", R"(, "zero_optimization": {"stage": 2})");
  EXPECT_DIAG(Validate(cfg, kDs), "scheduler-torch-wrapped-optimizer", "/scheduler/type");
  EXPECT_NO_DIAG(Validate(Config(R"({"type": "StepLR", "params": {"step_size": 10}})"), kDs), "scheduler-torch-wrapped-optimizer");
  EXPECT_NO_DIAG(Validate(cfg, As(Consumer::kMegatronDeepSpeed)), "scheduler-torch-wrapped-optimizer");
}

}  // namespace
}  // namespace dsp
