// SPDX-License-Identifier: Apache-2.0
// Shared fixtures for the schedule tests: a sample config rewritten by the passes it implies, its
// program, and the SimInput (tests/sim/cost/time_test_util.h) it was built from.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sim/graph/builder.h"
#include "sim/passes/from_config.h"
#include "sim/schedule/program.h"
#include "sim/cost/sim_input.h"
#include "tests/sim/cost/time_test_util.h"

namespace dsp::sim::schedule::testing {

struct ScheduleCase {
  Json config;
  std::unique_ptr<dsp::testing::SimCase> sim;
  graph::Graph graph;
  Program program;

  ScheduleCase(const std::string& config_file, int world, int gpus_per_node, const std::string& model_file,
               int64_t micro_batch = 1, int64_t seq_len = 2048, int64_t grad_accum = 1)
      : ScheduleCase(InlineConfig{dsp::testing::LoadSampleConfig(config_file)}, world, gpus_per_node,
                     model_file, micro_batch, seq_len, grad_accum) {}

  // A config written in the test rather than a sample file.
  struct InlineConfig {
    Json json;
  };
  ScheduleCase(InlineConfig inline_config, int world, int gpus_per_node, const std::string& model_file,
               int64_t micro_batch, int64_t seq_len, int64_t grad_accum)
      : config(std::move(inline_config.json)) {
    sim = std::make_unique<dsp::testing::SimCase>(config, world, gpus_per_node, model_file);
    sim->input.zero = ReadZeroSettings(config);
    sim->input.workload.micro_batch = micro_batch;
    sim->input.workload.seq_len = seq_len;
    sim->input.workload.grad_accum = grad_accum;
    auto g = graph::BuildModelGraph(sim->model);
    EXPECT_TRUE(g.ok());
    graph = std::move(g).value();
    auto pipeline = passes::PipelineForConfig({.model = &sim->model, .config = &config, .plan = &sim->plan});
    EXPECT_TRUE(pipeline.ok());
    auto ran = pipeline->Run(graph);
    EXPECT_TRUE(ran.ok()) << (ran.ok() ? "" : ran.error().message);
    auto p = BuildProgram(graph, sim->input);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    if (p.ok()) program = std::move(p).value();
  }

  const SimInput& input() const { return sim->input; }
};

inline int Count(const Program& p, const std::function<bool(const Task&)>& pred) {
  int n = 0;
  for (const Task& t : p.tasks) n += pred(t) ? 1 : 0;
  return n;
}

}  // namespace dsp::sim::schedule::testing
