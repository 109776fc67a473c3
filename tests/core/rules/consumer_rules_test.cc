// SPDX-License-Identifier: Apache-2.0
// --consumer: who fills "auto" (transformers integrations/deepspeed.py, accelerate
// utils/dataclasses.py and accelerator.py), which sections a launcher ignores.
#include <gtest/gtest.h>

#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Find;
using testing::FindAt;
using testing::MessageHas;
using testing::Validate;

using testing::As;

const char* kHfConfig = R"({
  "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "train_batch_size": "auto",
  "gradient_clipping": "auto", "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                        "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                    "warmup_num_steps": "auto", "total_num_steps": "auto"}}
})";

TEST(ConsumerRulesTest, TheTrainerFillsItsList) {
  auto r = Validate(kHfConfig, As(Consumer::kHfTrainer));
  // Only the key neither the Trainer nor Accelerate fills is left.
  const Diagnostic* d = Find(r, "auto-unfilled");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->pointer, "/zero_optimization/stage3_max_live_parameters");
  EXPECT_TRUE(MessageHas(r, "auto-unfilled", "not found in kwargs"));
  int count = 0;
  for (const auto& x : r.diagnostics) count += x.rule_id == "auto-unfilled";
  EXPECT_EQ(count, 1) << testing::Dump(r);
}

TEST(ConsumerRulesTest, AccelerateDoesNotFillBetasOrEps) {
  auto r = Validate(kHfConfig, As(Consumer::kAccelerate));
  EXPECT_NE(FindAt(r, "auto-unfilled", "/optimizer/params/betas"), nullptr) << testing::Dump(r);
  EXPECT_NE(FindAt(r, "auto-unfilled", "/optimizer/params/eps"), nullptr);
  EXPECT_EQ(FindAt(r, "auto-unfilled", "/optimizer/params/lr"), nullptr);
}

TEST(ConsumerRulesTest, NothingFillsAutoWhenDeepSpeedReadsTheFile) {
  auto r = Validate(kHfConfig, As(Consumer::kDeepSpeed));
  const Diagnostic* batch = FindAt(r, "auto-unfilled", "/train_batch_size");
  ASSERT_NE(batch, nullptr) << testing::Dump(r);
  EXPECT_EQ(batch->severity, Severity::kError);
  // In a pydantic section "auto" is dropped: the default applies (bf16 off).
  const Diagnostic* bf16 = FindAt(r, "auto-unfilled", "/bf16/enabled");
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->severity, Severity::kWarning);
  EXPECT_NE(bf16->message.find("not in 16-bit"), std::string::npos);
  // Without --consumer none of this is reported.
  EXPECT_NO_DIAG(Validate(kHfConfig), "auto-unfilled");
}

TEST(ConsumerRulesTest, MegatronIgnoresOptimizerSchedulerAndCheckpointing) {
  const char* cfg = R"({"train_batch_size": 8, "optimizer": {"type": "Adam", "params": {"lr": "auto", "max_grad_norm": 1.0}},
                        "scheduler": {"type": "WarmupLR", "params": {}}, "activation_checkpointing": {"partition_activations": true,
                        "contiguous_memory_optimization": true}})";
  auto r = Validate(cfg, As(Consumer::kMegatronDeepSpeed));
  EXPECT_NE(FindAt(r, "consumer-section-ignored", "/optimizer"), nullptr) << testing::Dump(r);
  EXPECT_NE(FindAt(r, "consumer-section-ignored", "/scheduler"), nullptr);
  EXPECT_NE(FindAt(r, "consumer-section-ignored", "/activation_checkpointing"), nullptr);
  EXPECT_NO_DIAG(r, "optimizer-max-grad-norm");
  EXPECT_NO_DIAG(r, "ckpt-contiguous-without-count");
  EXPECT_NO_DIAG(r, "auto-unfilled");
  EXPECT_TRUE(r.valid()) << testing::Dump(r);
  // The same file used by a script that calls DeepSpeed itself fails twice.
  auto ds = Validate(cfg, As(Consumer::kDeepSpeed));
  EXPECT_EQ(Find(ds, "optimizer-max-grad-norm")->severity, Severity::kError);
  EXPECT_EQ(Find(ds, "ckpt-contiguous-without-count")->severity, Severity::kError);
}

TEST(ConsumerRulesTest, TheTrainerNeedsAZeroSection) {
  EXPECT_DIAG(Validate(R"({"train_batch_size": "auto"})", As(Consumer::kHfTrainer)), "consumer-zero-section-required", "");
  EXPECT_NO_DIAG(Validate(R"({"train_batch_size": 8})", As(Consumer::kDeepSpeed)), "consumer-zero-section-required");
}

TEST(ConsumerRulesTest, StrictLoadersFailOnHjson) {
  const char* text = "{\n  # comment\n  \"train_batch_size\": 8,\n  \"zero_optimization\": {\"stage\": 1}\n}\n";
  auto plain = Validate(text);
  EXPECT_EQ(Find(plain, "json-comment")->severity, Severity::kWarning);
  auto hf = Validate(text, As(Consumer::kHfTrainer));
  EXPECT_EQ(Find(hf, "json-comment")->severity, Severity::kError);
  EXPECT_NE(Find(hf, "json-comment")->message.find("json.load"), std::string::npos);
  EXPECT_EQ(Find(Validate(text, As(Consumer::kDeepSpeed)), "json-comment")->severity, Severity::kWarning);
}

// deepspeed/__init__.py initialize (master @0a1fbe1d): `autotp_size = config.get("tensor_parallel",
// {}).get("autotp_size", 0); if autotp_size and autotp_size > 0:` runs on the raw dict, before
// DeepSpeedConfigModel could drop "auto": "auto" > 0 is a TypeError, whoever launches (with or
// without --consumer); Accelerate refuses it earlier with its own ValueError.
TEST(ConsumerRulesTest, AutotpSizeAutoIsATypeErrorInDeepspeedInitialize) {
  const char* config = R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": "auto"}})";
  for (Consumer c : {Consumer::kUnspecified, Consumer::kDeepSpeed, Consumer::kMegatronDeepSpeed}) {
    auto r = Validate(config, As(c));
    const Diagnostic* d = FindAt(r, "auto-unfilled", "/tensor_parallel/autotp_size");
    ASSERT_NE(d, nullptr) << testing::Dump(r);
    EXPECT_EQ(d->severity, Severity::kError);
    EXPECT_TRUE(MessageHas(r, "auto-unfilled", "TypeError"));
  }
  auto trainer = Validate(config, As(Consumer::kAccelerate));
  EXPECT_TRUE(MessageHas(trainer, "auto-unfilled", "not found in kwargs"));
}

}  // namespace
}  // namespace dsp
