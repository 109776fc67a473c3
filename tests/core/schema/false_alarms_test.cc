// SPDX-License-Identifier: Apache-2.0
// Legal configs DeepSpeed runs that validate must not call errors (issue 33, "False alarms"):
// each case names the DeepSpeed function that reads the value.
#include <gtest/gtest.h>

#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::FindAt;
using testing::Validate;

int Errors(const FileReport& r) {
  int n = 0;
  for (const Diagnostic& d : r.diagnostics) n += d.severity == Severity::kError ? 1 : 0;
  return n;
}

// runtime/config.py get_checkpoint_parallel_write_pipeline: `if par_write_pipeline in [True, False]`,
// so 0 and 1 (== False and True in Python) pass; 2, "true" and null raise DeepSpeedConfigError.
TEST(FalseAlarmsTest, ParallelWritePipelineStageTakesZeroAndOne) {
  for (const char* ok : {"true", "false", "0", "1"}) {
    auto r = Validate(std::string(R"({"train_batch_size": 8, "checkpoint": {"parallel_write": {"pipeline_stage": )") +
                      ok + "}}}");
    EXPECT_EQ(FindAt(r, "schema-enum", "/checkpoint/parallel_write/pipeline_stage"), nullptr) << ok;
    EXPECT_EQ(FindAt(r, "schema-type", "/checkpoint/parallel_write/pipeline_stage"), nullptr) << ok;
  }
  for (const char* bad : {"2", "\"true\"", "null"}) {
    auto r = Validate(std::string(R"({"train_batch_size": 8, "checkpoint": {"parallel_write": {"pipeline_stage": )") +
                      bad + "}}}");
    EXPECT_GT(Errors(r), 0) << bad << testing::Dump(r);
  }
}

// runtime/config.py get_scalar_param reads the batch keys with a None default
// (constants.py TRAIN_BATCH_SIZE_DEFAULT, GRADIENT_ACCUMULATION_STEPS_DEFAULT, ... are None), and
// _set_batch_related_parameters derives the one that is None: null is unset.
TEST(FalseAlarmsTest, NullBatchKeysAreUnset) {
  auto r = Validate(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": null})");
  EXPECT_EQ(Errors(r), 0) << testing::Dump(r);
  // ... and the batch check still runs on the rest: 7 // 1 // 8 = 0 accumulation steps.
  ValidateOptions world;
  world.world_size = 8;
  auto bad = Validate(R"({"train_batch_size": 7, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": null})",
                      world);
  EXPECT_NE(FindAt(bad, "batch-nonpositive", "/train_batch_size"), nullptr) << testing::Dump(bad);
  auto micro = Validate(R"({"train_batch_size": null, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1})");
  EXPECT_EQ(Errors(micro), 0) << testing::Dump(micro);
}

// data_efficiency and its random_ltd have no pydantic model: runtime/data_pipeline/config.py reads
// each key with get_scalar_param, which returns None for a null (falsy for the enabled flags).
TEST(FalseAlarmsTest, NullsInTheDictBasedDataEfficiencySection) {
  auto r = Validate(R"({"train_batch_size": 8, "data_efficiency": {"enabled": null, "seed": null,
      "data_sampling": {"enabled": null}, "data_routing": {"enabled": null, "random_ltd": {"enabled": null}}}})");
  EXPECT_EQ(Errors(r), 0) << testing::Dump(r);
  // A wrong type is still wrong.
  EXPECT_GT(Errors(Validate(R"({"train_batch_size": 8, "data_efficiency": {"seed": "x"}})")), 0);
}

// AutoEP's section is read only when enabled (DeepSpeed returns before reading the settings): a value
// it would reject when on is a warning when off, and an error again when on.
TEST(FalseAlarmsTest, AutoEpSettingsAreIgnoredWhileDisabled) {
  auto off = Validate(R"({"train_batch_size": 8, "expert_parallel": {"enabled": false, "preset_model": "nonsense"}})");
  const Diagnostic* d = FindAt(off, "schema-enum", "/expert_parallel/preset_model");
  ASSERT_NE(d, nullptr) << testing::Dump(off);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_NE(d->message.find("ignored while expert_parallel.enabled is not true"), std::string::npos);
  // On: validate_autoep_config's ValueError (rule ep-unknown-preset).
  auto on = Validate(R"({"train_batch_size": 8, "expert_parallel": {"enabled": true, "preset_model": "nonsense"}})");
  const Diagnostic* e = FindAt(on, "ep-unknown-preset", "/expert_parallel/preset_model");
  ASSERT_NE(e, nullptr) << testing::Dump(on);
  EXPECT_EQ(e->severity, Severity::kError);
}

// runtime/config.py reads data_types.buffer_dtype only with fp16 or bf16 enabled.
TEST(FalseAlarmsTest, BufferDtypeIsNotCheckedWithoutMixedPrecision) {
  EXPECT_EQ(Errors(Validate(R"({"train_batch_size": 8, "data_types": {"buffer_dtype": "int8"}})")), 0);
}

// tensor_parallel.partition_config is a plain dict (runtime/tensor_parallel/config.py:
// partition_config: Optional[Dict[str, Any]]); AutoTPConfig.from_dict (module_inject/
// autotp_config.py, edaa722) reads it with .get and checks no types: its flags are tested for
// truthiness, model_types entries go through str(), embedding_partition_dim and lm_head_patterns
// are stored and never read. DeepSpeed starts with each of these: warnings, not errors, except a
// string that says "false" where truthiness makes it true.
TEST(FalseAlarmsTest, PartitionConfigValuesDeepSpeedDoesNotCheck) {
  const std::string head =
      R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 2, "partition_config": {)";
  const std::string specs = R"("layer_specs": [{"patterns": [".*\\.o_proj\\.weight$"], "partition_type": "row", )";
  for (const std::string& body :
       {std::string(R"("use_default_specs": 1, "strict_mode": 0)"),
        std::string(R"("embedding_partition_dim": -1, "lm_head_patterns": "lm_head")"),
        specs + R"("grad_allreduce": 0, "model_types": [1]}])",
        specs + R"("gather_output": 1}])"}) {
    auto r = Validate(head + body + "}}}");
    EXPECT_EQ(Errors(r), 0) << body << "\n" << testing::Dump(r);
  }
  auto inverted = Validate(head + R"("strict_mode": "false"}}})");
  const Diagnostic* d = FindAt(inverted, "schema-type", "/tensor_parallel/partition_config/strict_mode");
  ASSERT_NE(d, nullptr) << testing::Dump(inverted);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_NE(d->message.find("the opposite of what it says"), std::string::npos) << d->message;
}

}  // namespace
}  // namespace dsp
