// SPDX-License-Identifier: Apache-2.0
#include "core/schema/schema_check.h"
#include "tests/core/model/model_test_util.h"
#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::Version;
using testing::Find;
using testing::FindAt;

using testing::Validate;

TEST(CheckpointingRulesTest, ContiguousNeedsPartition) {
  auto r = Validate(R"({"activation_checkpointing": {"contiguous_memory_optimization": true, "number_checkpoints": 32}})");
  EXPECT_DIAG(r, "ckpt-contiguous-without-partition", "/activation_checkpointing/contiguous_memory_optimization");
  const Diagnostic* d = testing::Find(r, "ckpt-contiguous-without-partition");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->message.find("Contiguous Checkpointing is only available with partitioned activations"),
            std::string::npos);
  EXPECT_NO_DIAG(r, "ckpt-contiguous-without-count");
  EXPECT_NO_DIAG(Validate(R"({"activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true, "number_checkpoints": 32}})"),
                 "ckpt-contiguous-without-partition");
}

TEST(CheckpointingRulesTest, ContiguousNeedsCount) {
  auto absent = Validate(R"({"activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true}})");
  EXPECT_DIAG(absent, "ckpt-contiguous-without-count", "/activation_checkpointing/contiguous_memory_optimization");
  EXPECT_DIAG(Validate(R"({"activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true, "number_checkpoints": null}})"),
              "ckpt-contiguous-without-count", "/activation_checkpointing/contiguous_memory_optimization");
  EXPECT_NO_DIAG(Validate(R"({"activation_checkpointing": {"partition_activations": true, "number_checkpoints": null}})"),
                 "ckpt-contiguous-without-count");
}

// checkpointing.py partition_activations indexes contiguous_data_buffers[i][data_offsets[i]], a
// list of number_checkpoints buffers that only CheckpointFunction.backward resets.
TEST(CheckpointingRulesTest, ContiguousCountBelowTheCheckpointedLayers) {
  const ModelSpec model = dsp::testing::ParsePresetOrDie("llama-3-8b.json");  // 32 layers
  ValidateOptions o;
  o.model = &model;
  const char* few = R"({"activation_checkpointing": {"partition_activations": true,
      "contiguous_memory_optimization": true, "number_checkpoints": 16}})";
  const char* enough = R"({"activation_checkpointing": {"partition_activations": true,
      "contiguous_memory_optimization": true, "number_checkpoints": 32}})";
  auto r = Validate(few, o);
  const Diagnostic* d = Find(r, "ckpt-contiguous-too-few");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_EQ(d->pointer, "/activation_checkpointing/number_checkpoints");
  EXPECT_NE(d->message.find("32 layer inputs"), std::string::npos) << d->message;
  EXPECT_NO_DIAG(Validate(enough, o), "ckpt-contiguous-too-few");
  EXPECT_NO_DIAG(Validate(few), "ckpt-contiguous-too-few");  // without --model nothing is counted
  // Two stages of 16 layers, 1F1B with 4 micro-batches: 2 forwards before the first backward.
  o.pp = 2;
  const char* pipelined = R"({"gradient_accumulation_steps": 4, "activation_checkpointing": {
      "partition_activations": true, "contiguous_memory_optimization": true, "number_checkpoints": 24}})";
  d = Find(Validate(pipelined, o), "ckpt-contiguous-too-few");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("32 layer inputs"), std::string::npos) << d->message;
  EXPECT_NO_DIAG(Validate(enough, o), "ckpt-contiguous-too-few");
}

TEST(CheckpointingRulesTest, CpuCheckpointingWithoutPartition) {
  auto r = Validate(R"({"activation_checkpointing": {"cpu_checkpointing": true}})");
  const Diagnostic* d = FindAt(r, "ckpt-cpu-without-partition", "/activation_checkpointing/cpu_checkpointing");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->severity, Severity::kNote);
  EXPECT_NE(d->message.find("side stream"), std::string::npos);
  auto old = Validate(R"({"activation_checkpointing": {"cpu_checkpointing": true}})", Version("0.19.5"));
  d = FindAt(old, "ckpt-cpu-without-partition", "/activation_checkpointing/cpu_checkpointing");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->message.find("blocking copies"), std::string::npos);
  EXPECT_NO_DIAG(Validate(R"({"activation_checkpointing": {"cpu_checkpointing": true, "partition_activations": true}})"),
                 "ckpt-cpu-without-partition");
}

TEST(CheckpointingRulesTest, StringFlagsAreTruthy) {
  auto r = Validate(R"({"activation_checkpointing": {"partition_activations": "false", "cpu_checkpointing": "true"}})");
  const Diagnostic* d = FindAt(r, "ckpt-flag-not-bool", "/activation_checkpointing/partition_activations");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_EQ(d->hint, "write a JSON boolean: \"partition_activations\": false");
  d = FindAt(r, "ckpt-flag-not-bool", "/activation_checkpointing/cpu_checkpointing");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarning);
  // "false" is truthy, so partition_activations counts as on: no cpu-without-partition note.
  EXPECT_NO_DIAG(r, "ckpt-cpu-without-partition");
  EXPECT_NO_DIAG(Validate(R"({"activation_checkpointing": {"partition_activations": false}})"), "ckpt-flag-not-bool");
}

// The misspelling DeepSpeed's own format string uses is caught by the unknown-key check.
TEST(CheckpointingRulesTest, PartitionedActivationsMisspelling) {
  const Json& schema = DeepSpeedConfigSchema();
  if (!schema.contains("properties") || !schema["properties"].contains("activation_checkpointing")) {
    GTEST_SKIP() << "schemas/ds_config.schema.json does not describe activation_checkpointing yet";
  }
  auto r = Validate(R"({"activation_checkpointing": {"partitioned_activations": true}})");
  const Diagnostic* d = FindAt(r, "unknown-key", "/activation_checkpointing/partitioned_activations");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->severity, Severity::kWarning);  // dict-parsed: DeepSpeed silently ignores it
  EXPECT_EQ(d->hint, "did you mean \"partition_activations\"?");
}

}  // namespace
}  // namespace dsp
