// SPDX-License-Identifier: Apache-2.0
// Shared fixtures for the step-time tests: an H100 SXM cluster filled by hand (datasheet and
// measured figures, docs/cost-model.md), sample configs and models, and a SimInput that owns what it points to.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/plan/plan.h"
#include "sim/cost/sim_input.h"
#include "tests/core/model/model_test_util.h"

namespace dsp::testing {

// H100 SXM: 989e12 dense bf16 FLOP/s, 80 GB at 3.35e12 B/s; NVLink4 busbw ~370 GB/s (nccl-tests
// #212); one NDR rail per GPU ~48 GB/s (SimAI's 48.5 calibration, rounded).
inline sim::Cluster H100Cluster(int gpus_per_node) {
  sim::Cluster c;
  c.name = "h100-test";
  c.gpu = {"H100 SXM", 989e12, 80e9, 3.35e12};
  c.gpus_per_node = gpus_per_node;
  c.intra_node = {370e9, 10e-6};
  c.inter_node = {48e9, 20e-6};
  c.host_to_device_bytes_per_second = 55e9;
  c.efficiency = {0.5, 0.8};
  return c;
}

inline Json ParseJsonOrDie(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

inline Json LoadSampleConfig(const std::string& file) {
  std::ifstream in(std::string(DSP_SOURCE_DIR) + "/samples/configs/" + file);
  EXPECT_TRUE(in.good()) << "cannot open samples/configs/" << file;
  std::stringstream text;
  text << in.rdbuf();
  return ParseJsonOrDie(text.str());
}

// Owns the plan, model and cluster a SimInput points to.
struct SimCase {
  Plan plan;
  ModelSpec model;
  sim::Cluster cluster;
  sim::SimInput input;

  SimCase(const Json& config, int world, int gpus_per_node, const std::string& model_file,
          int pp = 1) {
    PlanInputs inputs;
    inputs.world_size = world;
    inputs.gpus_per_node = gpus_per_node;
    inputs.pp = pp;
    Result<Plan> built = BuildPlan(config, inputs);
    if (!built.ok())
      ADD_FAILURE() << built.error().message;
    else
      plan = *built;
    model = ParsePresetOrDie(model_file);
    cluster = H100Cluster(gpus_per_node);
    input.plan = &plan;
    input.model = &model;
    input.cluster = &cluster;
    input.zero.stage = static_cast<int>(plan.zero_stage);
  }
  SimCase(const SimCase&) = delete;
  SimCase& operator=(const SimCase&) = delete;
};

}  // namespace dsp::testing
