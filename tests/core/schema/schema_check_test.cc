// SPDX-License-Identifier: Apache-2.0
#include "core/schema/schema_check.h"

#include <gtest/gtest.h>

#include "tests/core/rules/rule_test_util.h"

namespace dsp {
namespace {

using testing::FindAt;
using testing::Validate;

TEST(SchemaCheckTest, SchemaParsesAndDescribesTheSurface) {
  const Json& schema = DeepSpeedConfigSchema();
  EXPECT_EQ(schema["$schema"], "http://json-schema.org/draft-07/schema#");
  EXPECT_TRUE(schema["properties"].contains("zero_optimization"));
  EXPECT_TRUE(schema["properties"].contains("expert_parallel"));
  EXPECT_TRUE(schema["properties"].contains("tensor_parallel"));
}

TEST(SchemaCheckTest, TypeErrorSaysWhatIsExpected) {
  auto r = Validate(R"({"zero_optimization": {"reduce_bucket_size": "big"}})");
  const Diagnostic* d = FindAt(r, "schema-type", "/zero_optimization/reduce_bucket_size");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_EQ(d->severity, Severity::kError);
  // runtime/zero/config.py: reduce_bucket_size: int = Field(ge=0).
  EXPECT_NE(d->message.find("expects an integer >= 0"), std::string::npos) << d->message;
  EXPECT_EQ(d->loc.line, 1);
  EXPECT_EQ(d->loc.column, 46);
}

TEST(SchemaCheckTest, EnumErrorListsChoicesAndSuggests) {
  auto r = Validate(R"({"zero_optimization": {"offload_optimizer": {"device": "cpus"}}})");
  const Diagnostic* d = FindAt(r, "schema-enum", "/zero_optimization/offload_optimizer/device");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_NE(d->message.find("\"none\", \"cpu\" or \"nvme\""), std::string::npos) << d->message;
  EXPECT_EQ(d->hint, "did you mean \"cpu\"?");
}

TEST(SchemaCheckTest, RangeError) {
  auto r = Validate(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"ratio": 1.5}}})");
  EXPECT_DIAG(r, "schema-range", "/zero_optimization/offload_optimizer/ratio");
}

TEST(SchemaCheckTest, PatternViolationIsSchemaInvalid) {
  auto r = Validate(R"({"checkpoint": {"tag_validation": "explode"}})");
  const Diagnostic* d = FindAt(r, "schema-invalid", "/checkpoint/tag_validation");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_NE(d->message.find("does not match the accepted form"), std::string::npos) << d->message;
  EXPECT_NE(d->hint.find("Ignore, Warn or Fail"), std::string::npos) << d->hint;
  EXPECT_NO_DIAG(Validate(R"({"checkpoint": {"tag_validation": "warn"}})"), "schema-invalid");
}

TEST(SchemaCheckTest, PydanticLaxValuesAreWarningsOnlyInPydanticSections) {
  auto lax = Validate(R"({"fp16": {"enabled": 1}})");
  const Diagnostic* d = FindAt(lax, "schema-type", "/fp16/enabled");
  ASSERT_NE(d, nullptr) << testing::Dump(lax);
  EXPECT_EQ(d->severity, Severity::kWarning);
  auto strict = Validate(R"({"fp16": {"enabled": "maybe"}})");
  const Diagnostic* e = FindAt(strict, "schema-type", "/fp16/enabled");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->severity, Severity::kError);
}

TEST(SchemaCheckTest, AutoValuesAreNotTypeErrors) {
  auto r = Validate(R"({"bf16": {"enabled": "auto"}, "zero_optimization": {"reduce_bucket_size": "auto"}})");
  EXPECT_NO_DIAG(r, "schema-type");
}

TEST(SchemaCheckTest, UnknownKeySeverityFollowsDeepSpeedStrictness) {
  auto r = Validate(R"({"zero_optimization": {"overlap_com": true}, "gradient_clippin": 1.0,
                        "expert_parallel": {"autoep_sizes": 2}})");
  const Diagnostic* strict = FindAt(r, "unknown-key", "/zero_optimization/overlap_com");
  ASSERT_NE(strict, nullptr) << testing::Dump(r);
  EXPECT_EQ(strict->severity, Severity::kError);
  EXPECT_EQ(strict->hint, "did you mean \"overlap_comm\"?");
  const Diagnostic* top = FindAt(r, "unknown-key", "/gradient_clippin");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->severity, Severity::kWarning);
  EXPECT_EQ(top->hint, "did you mean \"gradient_clipping\"?");
  // Reported at the key, not the value.
  EXPECT_EQ(top->loc.column, 46);
  const Diagnostic* ep = FindAt(r, "unknown-key", "/expert_parallel/autoep_sizes");
  ASSERT_NE(ep, nullptr);
  EXPECT_EQ(ep->severity, Severity::kWarning);
}

TEST(SchemaCheckTest, CommentStyleKeysAndOpenSectionsAreNotUnknown) {
  auto r = Validate(R"({"_comment": "x", "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "foo": 1}}})");
  EXPECT_NO_DIAG(r, "unknown-key");
}

TEST(SchemaCheckTest, DeprecatedKeyNamesReplacement) {
  auto r = Validate(R"({"zero_optimization": {"stage": 2, "cpu_offload": true}})");
  const Diagnostic* d = FindAt(r, "deprecated-key", "/zero_optimization/cpu_offload");
  ASSERT_NE(d, nullptr) << testing::Dump(r);
  EXPECT_NE(d->hint.find("offload_optimizer"), std::string::npos) << d->hint;
}

TEST(SchemaCheckTest, ProposedSpFormsAreNotUnknownKeys) {
  auto r = Validate(R"({"compile": {"sp_size": 2, "dp_size": 2}, "sequence_parallel": {"autosp_size": 2}})");
  EXPECT_NO_DIAG(r, "unknown-key");
  EXPECT_DIAG(r, "sp-compile-key-rejected", "/compile/sp_size");
}

TEST(SchemaCheckTest, StripAutoValuesKeepsEverythingElse) {
  Json in = Json::parse(R"({"a": "auto", "b": {"c": "auto", "d": 1}, "e": ["auto", 2]})");
  Json out = StripAutoValues(in);
  EXPECT_FALSE(out.contains("a"));
  EXPECT_FALSE(out["b"].contains("c"));
  EXPECT_EQ(out["b"]["d"], 1);
  EXPECT_EQ(out["e"], Json::parse(R"(["auto", 2])"));
}

}  // namespace
}  // namespace dsp

namespace dsp {
namespace {

// pydantic v2 lax mode, as DeepSpeedConfigModel validates the Python objects hjson returns
// (checked against pydantic 2.13): coercible values are warnings, the rest errors.
TEST(SchemaCheckTest, PydanticLaxCoercionIsNoError) {
  auto r = testing::Validate(
      R"({"train_batch_size": 8, "zero_optimization": {"stage": "2", "reduce_bucket_size": " 5_000 ", "overlap_comm": "Yes",
          "allgather_bucket_size": 1e10, "sub_group_size": 2.0}})");
  const Diagnostic* stage = testing::FindAt(r, "schema-type", "/zero_optimization/stage");
  ASSERT_NE(stage, nullptr) << testing::Dump(r);
  EXPECT_EQ(stage->severity, Severity::kWarning);
  EXPECT_EQ(testing::FindAt(r, "schema-enum", "/zero_optimization/stage"), nullptr) << testing::Dump(r);
  EXPECT_EQ(testing::FindAt(r, "schema-type", "/zero_optimization/reduce_bucket_size")->severity, Severity::kWarning);
  EXPECT_EQ(testing::FindAt(r, "schema-type", "/zero_optimization/overlap_comm")->severity, Severity::kWarning);
  // A whole float for an int field (1e10 stays a float in hjson) is what pydantic takes silently.
  EXPECT_EQ(testing::FindAt(r, "schema-type", "/zero_optimization/allgather_bucket_size"), nullptr);
  EXPECT_TRUE(r.valid()) << testing::Dump(r);
}

TEST(SchemaCheckTest, PydanticRejectsWhatItCannotCoerce) {
  auto r = testing::Validate(
      R"({"train_batch_size": 8, "zero_optimization": {"stage": "4", "reduce_bucket_size": "5e8", "allgather_bucket_size": 2.5,
          "overlap_comm": "2", "sub_group_size": "-1"}})");
  for (const char* p : {"/zero_optimization/reduce_bucket_size", "/zero_optimization/allgather_bucket_size",
                        "/zero_optimization/overlap_comm"}) {
    const Diagnostic* d = testing::FindAt(r, "schema-type", p);
    ASSERT_NE(d, nullptr) << p << testing::Dump(r);
    EXPECT_EQ(d->severity, Severity::kError) << p;
  }
  EXPECT_FALSE(r.valid());
  bool stage_error = false, sub_group_error = false;
  for (const auto& d : r.diagnostics) {
    if (d.pointer == "/zero_optimization/stage" && d.severity == Severity::kError) stage_error = true;
    if (d.pointer == "/zero_optimization/sub_group_size" && d.severity == Severity::kError) sub_group_error = true;
  }
  EXPECT_TRUE(stage_error) << testing::Dump(r);      // "4" coerces to 4, which is no ZeroStageEnum member
  EXPECT_TRUE(sub_group_error) << testing::Dump(r);  // "-1" coerces to -1, below ge=0
}

TEST(SchemaCheckTest, LeafModuleNullIsAnEmptySection) {
  // DeepSpeedZeroLeafModuleConfig's before-validator turns null into {} (runtime/zero/leaf_module_config.py).
  auto r = testing::Validate(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3, "leaf_module": null}})");
  EXPECT_EQ(testing::FindAt(r, "schema-type", "/zero_optimization/leaf_module"), nullptr) << testing::Dump(r);
  auto bad = testing::Validate(R"({"train_batch_size": 8, "zero_optimization": {"stage": 3, "leaf_module": "x"}})");
  EXPECT_NE(testing::FindAt(bad, "schema-type", "/zero_optimization/leaf_module"), nullptr);
}

TEST(SchemaCheckTest, StrictIsBoundByDeepSpeedConfigModel) {
  // DeepSpeedConfigModel.__init__(self, strict=False, **data): "strict" never reaches pydantic.
  auto r = testing::Validate(R"({"train_batch_size": 8, "zero_optimization": {"stage": 1, "strict": false}})");
  EXPECT_EQ(testing::FindAt(r, "unknown-key", "/zero_optimization/strict"), nullptr) << testing::Dump(r);
  auto typo = testing::Validate(R"({"train_batch_size": 8, "zero_optimization": {"stage": 1, "strictt": false}})");
  EXPECT_NE(testing::FindAt(typo, "unknown-key", "/zero_optimization/strictt"), nullptr);
}

}  // namespace
}  // namespace dsp
