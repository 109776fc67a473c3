// SPDX-License-Identifier: Apache-2.0
// Speed targets for the schedule simulation (run: build/release/bench/dsp_bench
// --benchmark_filter=Schedule): a 16,384-rank plan simulates in under 2 s by symmetry. Each
// iteration derives the rank classes, builds the program from the rewritten graph and simulates
// it; the plan and the graph are built once.
#include <benchmark/benchmark.h>

#include "core/plan/plan.h"
#include "core/util/file_io.h"
#include "sim/cost/cluster.h"
#include "sim/graph/builder.h"
#include "sim/passes/from_config.h"
#include "sim/schedule/program.h"
#include "sim/schedule/simulator.h"

namespace {

struct Fixture {
  dsp::ModelSpec model;
  dsp::sim::Cluster cluster;
  dsp::Json config;
  dsp::Plan plan;
  dsp::sim::graph::Graph graph;
  dsp::sim::SimInput input;

  Fixture(const char* model_file, const char* config_text, int world) {
    auto read = [](const std::string& rel) {
      return dsp::Json::parse(dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel).value());
    };
    model = dsp::ParseHfConfig(read(model_file)).value();
    cluster = dsp::sim::ParseCluster(read("samples/clusters/h100-sxm.json")).value();
    config = dsp::Json::parse(config_text);
    dsp::PlanInputs in;
    in.world_size = world;
    in.gpus_per_node = 8;
    plan = dsp::BuildPlan(config, in).value();
    graph = dsp::sim::graph::BuildModelGraph(model).value();
    auto pipeline = dsp::sim::passes::PipelineForConfig({.model = &model, .config = &config, .plan = &plan});
    (void)pipeline->Run(graph);
    input.plan = &plan;
    input.model = &model;
    input.cluster = &cluster;
    input.zero = dsp::sim::ReadZeroSettings(config);
    input.workload.seq_len = 4096;
    input.workload.grad_accum = 1;
  }
};

void Run(benchmark::State& state, Fixture& f, bool full) {
  for (auto _ : state) {
    auto program = dsp::sim::schedule::BuildProgram(f.graph, f.input);
    auto schedule = dsp::sim::schedule::Simulate(*program, f.input, {.full = full, .slow_ranks = {}});
    if (!schedule.ok()) state.SkipWithError(schedule.error().message.c_str());
    benchmark::DoNotOptimize(schedule);
  }
}

// Llama-3-70B, AutoTP 8, ZeRO-1, 16,384 ranks (2,048 nodes of 8): one rank class.
void BM_ScheduleLlama70bOn16384(benchmark::State& state) {
  static Fixture f("samples/models/llama-3-70b.json",
                   R"({"train_batch_size": 2048, "tensor_parallel": {"autotp_size": 8}, "zero_optimization": {"stage": 1}})",
                   16384);
  Run(state, f, false);
}
BENCHMARK(BM_ScheduleLlama70bOn16384)->Unit(benchmark::kMillisecond);

// The same model on 64 ranks, every rank simulated (--full).
void BM_ScheduleLlama70bOn64Full(benchmark::State& state) {
  static Fixture f("samples/models/llama-3-70b.json",
                   R"({"train_batch_size": 8, "tensor_parallel": {"autotp_size": 8}, "zero_optimization": {"stage": 1}})",
                   64);
  Run(state, f, true);
}
BENCHMARK(BM_ScheduleLlama70bOn64Full)->Unit(benchmark::kMillisecond);

}  // namespace
