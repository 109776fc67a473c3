// SPDX-License-Identifier: Apache-2.0
#include "core/schema/schema_keys.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/schema/schema_check.h"

namespace dsp {
namespace {

bool Has(const std::vector<std::string>& keys, const std::string& key) {
  return std::binary_search(keys.begin(), keys.end(), key);
}

TEST(SchemaKeysTest, NestedSectionsAndRefsAreWalked) {
  const std::vector<std::string> keys = SchemaKeyPaths(DeepSpeedConfigSchema());
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_TRUE(Has(keys, "train_micro_batch_size_per_gpu"));
  EXPECT_TRUE(Has(keys, "zero_optimization.stage"));
  EXPECT_TRUE(Has(keys, "zero_optimization.offload_optimizer.device"));
  EXPECT_TRUE(Has(keys, "tensor_parallel.autotp_size"));
  EXPECT_TRUE(Has(keys, "expert_parallel.autoep_size"));
  EXPECT_FALSE(Has(keys, "$schema"));
  EXPECT_GT(keys.size(), 150u);
}

TEST(SchemaKeysTest, AHandWrittenSchemaGivesExactlyItsPaths) {
  const Json schema = Json::parse(R"({
    "definitions": {"offload": {"type": "object", "properties": {"device": {}, "pin_memory": {}}}},
    "properties": {
      "a": {"type": "object", "properties": {"b": {}, "c": {"$ref": "#/definitions/offload"}}},
      "d": {"anyOf": [{"type": "object", "properties": {"e": {}}}, {"type": "boolean"}]}
    }})");
  EXPECT_EQ(SchemaKeyPaths(schema),
            (std::vector<std::string>{"a", "a.b", "a.c", "a.c.device", "a.c.pin_memory", "d", "d.e"}));
}

}  // namespace
}  // namespace dsp
