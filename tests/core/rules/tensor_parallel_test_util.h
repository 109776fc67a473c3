// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the AutoTP rule tests: inline tensor_parallel configs and options.
#pragma once

#include <optional>
#include <string>

#include "tests/core/model/model_test_util.h"
#include "tests/core/rules/rule_test_util.h"

// In their own namespace: inline helpers of other test headers may share these names.
namespace dsp::tptest {

using testing::Find;
using testing::World;

inline ValidateOptions At(int64_t world, const ModelSpec* model = nullptr,
                          std::optional<int64_t> gpn = std::nullopt) {
  ValidateOptions o;
  o.world_size = world;
  o.model = model;
  o.gpus_per_node = gpn;
  return o;
}

inline ValidateOptions Version(const char* v, int64_t world = 8) {
  ValidateOptions o = World(world);
  o.version = *DeepSpeedVersion::Parse(v);
  return o;
}

// Wraps a tensor_parallel body into a config the batch rules accept.
inline std::string Tp(const std::string& body) {
  return R"({"train_micro_batch_size_per_gpu": 1, "tensor_parallel": )" + body + "}";
}

// A complete llama layer_specs list (row first, as DeepSpeed's presets do).
inline constexpr const char* kLlamaSpecs = R"json(
  {"patterns": [".*\\.self_attn\\.o_proj\\.weight$", ".*\\.mlp\\.down_proj\\.weight$"], "partition_type": "row"},
  {"patterns": [".*\\.self_attn\\.[qkv]_proj\\.weight$", ".*\\.mlp\\.(gate|up)_proj\\.weight$"], "partition_type": "column"})json";

inline std::string Specs(const std::string& specs, const std::string& extra = "") {
  return Tp(R"({"autotp_size": 2, "partition_config": {"use_default_specs": false,)" + extra +
            R"( "layer_specs": [)" + specs + "]}}");
}

inline std::string MessageOf(const FileReport& r, const std::string& id) {
  const Diagnostic* d = Find(r, id);
  return d == nullptr ? "" : d->message + " | " + d->hint;
}

}  // namespace dsp::tptest
