// SPDX-License-Identifier: Apache-2.0
// Speed targets for tune (run: build/release/bench/dsp_bench --benchmark_filter=Tune):
//   at least 100,000 plans per second on one core with pipeline stages in the space (counter
//   "plans_per_second", the search alone: BM_TuneLlama70bOn4096, BM_TuneMixtralOn64);
//   a full search for a 70B dense model on 4,096 GPUs in under 5 s;
//   the event-simulation re-rank of the best 10 plans in under 1 s (BM_TuneRerank*: the search
//   plus the re-rank).
#include <benchmark/benchmark.h>

#include "core/util/file_io.h"
#include "core/plan/plan.h"
#include "sim/comm/group_links.h"
#include "sim/cost/sim_input.h"
#include "sim/tune/tune.h"

namespace {

dsp::ModelSpec LoadModel(const char* rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return dsp::ParseHfConfig(dsp::Json::parse(text.value())).value();
}

dsp::sim::Cluster LoadCluster(const char* rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return dsp::sim::ParseCluster(dsp::Json::parse(text.value(), nullptr, true, true)).value();
}

void RunTune(benchmark::State& state, const char* model_path, int64_t world, int rerank = 0,
             dsp::sim::Engine engine = dsp::sim::Engine::kDeepSpeed) {
  dsp::ModelSpec model = LoadModel(model_path);
  dsp::sim::Cluster cluster = LoadCluster("samples/clusters/h100-sxm.json");
  dsp::sim::TuneOptions options;
  options.engine = engine;
  options.world_size = world;
  options.seq_len = 4096;
  options.rerank = rerank;
  int64_t plans = 0;
  for (auto _ : state) {
    auto result = dsp::sim::Tune(model, cluster, options);
    plans += result->evaluated;
    benchmark::DoNotOptimize(result);
  }
  state.counters["plans_per_second"] = benchmark::Counter(static_cast<double>(plans), benchmark::Counter::kIsRate);
  state.counters["plans"] = static_cast<double>(plans) / static_cast<double>(state.iterations());
}

void BM_TuneLlama70bOn4096(benchmark::State& state) { RunTune(state, "samples/models/llama-3-70b.json", 4096); }
BENCHMARK(BM_TuneLlama70bOn4096)->Unit(benchmark::kMillisecond);

void BM_TuneMixtralOn64(benchmark::State& state) { RunTune(state, "samples/models/mixtral-8x7b.json", 64); }
BENCHMARK(BM_TuneMixtralOn64)->Unit(benchmark::kMillisecond);

// The other engines' own spaces (context and expert parallelism, FP8, FSDP2's stages under pp).
void BM_TuneLlama70bOn4096Fsdp2(benchmark::State& state) {
  RunTune(state, "samples/models/llama-3-70b.json", 4096, 0, dsp::sim::Engine::kFsdp2);
}
BENCHMARK(BM_TuneLlama70bOn4096Fsdp2)->Unit(benchmark::kMillisecond);

void BM_TuneLlama70bOn4096MegatronLm(benchmark::State& state) {
  RunTune(state, "samples/models/llama-3-70b.json", 4096, 0, dsp::sim::Engine::kMegatronLm);
}
BENCHMARK(BM_TuneLlama70bOn4096MegatronLm)->Unit(benchmark::kMillisecond);

void BM_TuneMixtralOn64MegatronLm(benchmark::State& state) {
  RunTune(state, "samples/models/mixtral-8x7b.json", 64, 0, dsp::sim::Engine::kMegatronLm);
}
BENCHMARK(BM_TuneMixtralOn64MegatronLm)->Unit(benchmark::kMillisecond);

void BM_TuneRerankLlama70bOn4096(benchmark::State& state) {
  RunTune(state, "samples/models/llama-3-70b.json", 4096, 10);
}
BENCHMARK(BM_TuneRerankLlama70bOn4096)->Unit(benchmark::kMillisecond);

void BM_TuneRerankMixtralOn64(benchmark::State& state) {
  RunTune(state, "samples/models/mixtral-8x7b.json", 64, 10);
}
BENCHMARK(BM_TuneRerankMixtralOn64)->Unit(benchmark::kMillisecond);

}  // namespace

namespace {

// One cost-model evaluation (memory + step time) of a prepared plan: the inner loop of tune.
void BM_CostModelEvaluation(benchmark::State& state) {
  dsp::ModelSpec model = LoadModel("samples/models/llama-3-70b.json");
  dsp::sim::Cluster cluster = LoadCluster("samples/clusters/h100-sxm.json");
  dsp::Json config = dsp::Json::parse(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})");
  dsp::PlanInputs pin;
  pin.world_size = 512;
  pin.gpus_per_node = 8;
  auto plan = dsp::BuildPlan(config, pin);
  dsp::sim::SimInput input;
  input.plan = &*plan;
  input.model = &model;
  input.cluster = &cluster;
  input.zero = dsp::sim::ReadZeroSettings(config);
  input.workload.seq_len = 4096;
  input.workload.grad_accum = 4;
  dsp::sim::GroupLinkCache links;  // as tune shares it across the evaluations of one plan
  input.link_cache = &links;
  for (auto _ : state) {
    auto mem = dsp::sim::EstimateMemory(input);
    auto time = dsp::sim::EstimateStepTime(input);
    benchmark::DoNotOptimize(mem);
    benchmark::DoNotOptimize(time);
  }
}
BENCHMARK(BM_CostModelEvaluation)->Unit(benchmark::kMicrosecond);

}  // namespace
