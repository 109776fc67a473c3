// SPDX-License-Identifier: Apache-2.0
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Validate;
using testing::World;

// Worked examples from DeepSpeed's tests/unit/runtime/test_ds_config_dict.py (ws = 2).
TEST(BatchRulesTest, DeepSpeedWorkedExamples) {
  auto ok1 = Validate(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1})", World(2));
  EXPECT_NO_DIAG(ok1, "batch-mismatch");
  auto ok2 = Validate(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2})", World(2));
  EXPECT_TRUE(ok2.valid()) << testing::Dump(ok2);
  auto bad = Validate(R"({"train_batch_size": 33, "train_micro_batch_size_per_gpu": 17, "gradient_accumulation_steps": 2})", World(2));
  EXPECT_DIAG(bad, "batch-mismatch", "/train_batch_size");
  auto bad2 = Validate(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 18, "gradient_accumulation_steps": 1})", World(2));
  EXPECT_DIAG(bad2, "batch-mismatch", "/train_batch_size");
}

TEST(BatchRulesTest, FillInDerivesZeroAccumulationSteps) {
  // batch + micro only: gas = 33 // 17 // 2 = 0.
  auto r = Validate(R"({"train_batch_size": 33, "train_micro_batch_size_per_gpu": 17})", World(2));
  EXPECT_DIAG(r, "batch-nonpositive", "/train_batch_size");
  const auto* d = testing::Find(r, "batch-nonpositive");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("Gradient accumulation steps: 0"), std::string::npos) << d->message;
}

TEST(BatchRulesTest, SequenceParallelDividesTheWorld) {
  // AutoSP test: W=4, sequence_parallel_size=2, micro=1 -> train_batch_size must be 2.
  auto ok = Validate(R"({"train_batch_size": 2, "train_micro_batch_size_per_gpu": 1, "sequence_parallel_size": 2})", World(4));
  EXPECT_NO_DIAG(ok, "batch-mismatch");
  auto bad = Validate(R"({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "sequence_parallel_size": 2})", World(4));
  EXPECT_DIAG(bad, "batch-mismatch", "/train_batch_size");
}

TEST(BatchRulesTest, MissingBatch) {
  auto r = Validate(R"({"gradient_accumulation_steps": 4})", World(8));
  EXPECT_DIAG(r, "batch-missing", "");
  EXPECT_NO_DIAG(Validate(R"({"train_micro_batch_size_per_gpu": 4})", World(8)), "batch-missing");
}

TEST(BatchRulesTest, NonPositiveGivenValue) {
  auto r = Validate(R"({"train_micro_batch_size_per_gpu": 0})");
  EXPECT_DIAG(r, "batch-nonpositive", "/train_micro_batch_size_per_gpu");
}

TEST(BatchRulesTest, CandidatesWithoutWorldSize) {
  auto r = Validate(R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})");
  const auto* d = testing::Find(r, "batch-dp-candidates");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_NE(d->message.find("size of 4"), std::string::npos) << d->message;
  auto impossible = Validate(R"({"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})");
  EXPECT_DIAG(impossible, "batch-mismatch", "/train_batch_size");
}

TEST(BatchRulesTest, AutoIsDeferredUntilSet) {
  auto r = Validate(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"})", World(8));
  EXPECT_DIAG(r, "batch-deferred", "/train_batch_size");
  EXPECT_TRUE(r.valid());
  auto set = Validate(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"})", World(8),
                      {ParseOverride("train_batch_size=40").value(), ParseOverride("/train_micro_batch_size_per_gpu=4").value()});
  EXPECT_NO_DIAG(set, "batch-deferred");
  EXPECT_DIAG(set, "batch-mismatch", "/train_batch_size");
}

TEST(BatchRulesTest, ElasticityConflict) {
  auto r = Validate(R"({"train_batch_size": 8, "elasticity": {"enabled": true}})", World(8));
  EXPECT_DIAG(r, "batch-elasticity", "/train_batch_size");
  auto ok = Validate(R"({"train_batch_size": 8, "elasticity": {"enabled": true, "ignore_non_elastic_batch_info": true}})", World(8));
  EXPECT_NO_DIAG(ok, "batch-elasticity");
}

TEST(BatchRulesTest, AutoTpChecksAgainstFullWorld) {
  auto r = Validate(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "tensor_parallel": {"autotp_size": 2}})", World(8));
  EXPECT_NO_DIAG(r, "batch-mismatch");
  EXPECT_DIAG(r, "batch-autotp-world", "/train_batch_size");
}

TEST(BatchRulesTest, UnmanagedAccumulation) {
  auto r = Validate(R"({"train_batch_size": 8, "managed_gradient_accumulation": false, "compile": {"deepcompile": true}})", World(8));
  EXPECT_DIAG(r, "batch-unmanaged-accumulation", "/managed_gradient_accumulation");
}

}  // namespace
}  // namespace dsp
