// SPDX-License-Identifier: Apache-2.0
// Fixtures for the per-parallelism collective planners: a plan built from a config and the
// launcher's sizes (Megatron's --tp and rank layout too), a sample model, the hand-filled H100
// cluster of the step-time tests, and one planner run at a time.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/comm/planner.h"
#include "tests/sim/cost/time_test_util.h"

namespace dsp::testing {

struct CommCase {
  Plan plan;
  ModelSpec model;
  sim::Cluster cluster;
  sim::SimInput input;

  CommCase(const std::string& config_text, const PlanInputs& inputs, const std::string& model_file,
           sim::Engine engine = sim::Engine::kDeepSpeed) {
    Result<Plan> built = BuildPlan(ParseJsonOrDie(config_text), inputs);
    if (!built.ok()) {
      ADD_FAILURE() << built.error().message;
    } else {
      plan = *built;
    }
    model = ParsePresetOrDie(model_file);
    cluster = H100Cluster(static_cast<int>(inputs.gpus_per_node.value_or(8)));
    input.plan = &plan;
    input.model = &model;
    input.cluster = &cluster;
    input.zero = sim::ReadZeroSettings(ParseJsonOrDie(config_text), DeepSpeedVersion::Newest());
    input.engine.engine = engine;
    input.workload.micro_batch = 1;
    input.workload.seq_len = 4096;
    input.workload.grad_accum = 1;
  }
  CommCase(const CommCase&) = delete;
  CommCase& operator=(const CommCase&) = delete;

  // What one planner appends, alone.
  std::vector<sim::PlannedCollective> Run(
      const std::function<void(const sim::PlanContext&, sim::CollectivePlanner&)>& planner,
      const sim::StepTimeOptions& options = {}) const {
    const sim::PlanContext ctx = sim::MakePlanContext(input, options);
    sim::CollectivePlanner out(input);
    planner(ctx, out);
    return out.Take();
  }
};

inline PlanInputs Sizes(int64_t world, int64_t gpus_per_node, int64_t pp = 1, int64_t mpu_tp = 0,
                        RankLayout layout = RankLayout::kDeepSpeed) {
  PlanInputs in;
  in.world_size = world;
  in.gpus_per_node = gpus_per_node;
  in.pp = pp;
  in.mpu_tp = mpu_tp;
  in.layout = layout;
  return in;
}

inline std::vector<std::string> Purposes(const std::vector<sim::PlannedCollective>& planned) {
  std::vector<std::string> out;
  for (const sim::PlannedCollective& p : planned) out.emplace_back(p.call.purpose);
  return out;
}

inline const sim::PlannedCollective* FindPlanned(const std::vector<sim::PlannedCollective>& planned,
                                                 std::string_view purpose) {
  for (const sim::PlannedCollective& p : planned) {
    if (p.call.purpose == purpose) return &p;
  }
  return nullptr;
}

}  // namespace dsp::testing
