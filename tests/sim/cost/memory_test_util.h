// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the memory-model tests: plans from inline configs, model presets, an 80 GB GPU.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/plan/plan.h"
#include "sim/cost/activation_memory.h"
#include "sim/cost/memory_model.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::sim::testing {

inline Plan PlanOrDie(const std::string& config_json, int64_t world, int64_t gpus_per_node = 8) {
  Result<Plan> plan = BuildPlan(Json::parse(config_json), PlanInputs{.world_size = world,
                                                                       .gpus_per_node = gpus_per_node});
  if (!plan.ok()) {
    ADD_FAILURE() << config_json << ": " << plan.error().message;
    return Plan{};
  }
  return *plan;
}

// One decoder layer of Llama 3 8B (hidden 4096, 32 query heads over 8 KV heads of 128, SwiGLU
// 14336, no dropout) at 4,096 tokens, micro-batch 1.
inline LayerShape Llama3_8BLayer() {
  LayerShape s;
  s.seq_len = 4096;
  s.hidden = 4096;
  s.heads = 32;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.ffn = 14336;
  s.gated_mlp = true;
  s.dropout = false;
  return s;
}

// An 8 x 80 GB node (H100 SXM); only hbm_bytes matters for memory.
inline Cluster Gpu80GB() {
  Cluster c;
  c.name = "test-h100";
  c.gpu.name = "H100 SXM";
  c.gpu.hbm_bytes = 80e9;
  c.gpus_per_node = 8;
  return c;
}

// Everything EstimateMemory reads, owned in one place.
struct MemoryCase {
  Plan plan;
  ModelSpec model;
  Cluster cluster = Gpu80GB();
  Workload workload;
  ZeroSettings zero;
  EngineSettings engine;

  MemoryCase(const std::string& config_json, int64_t world, const std::string& model_file)
      : plan(PlanOrDie(config_json, world)),
        model(dsp::testing::ParsePresetOrDie(model_file)),
        zero(ReadZeroSettings(Json::parse(config_json))) {}

  MemoryReport Run() const {
    SimInput in;
    in.plan = &plan;
    in.model = &model;
    in.cluster = &cluster;
    in.workload = workload;
    in.zero = zero;
    in.engine = engine;
    return EstimateMemory(in);
  }
};

inline double ModelStates(const MemoryReport& r) {
  return r.parameters_bytes + r.gradients_bytes + r.optimizer_states_bytes;
}

}  // namespace dsp::sim::testing
