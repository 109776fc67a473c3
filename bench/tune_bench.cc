// Speed targets for tune (run: build/release/bench/dsp_bench --benchmark_filter=Tune):
//   at least 100,000 plans per second on one core (counter "plans_per_second");
//   a full search for a 70B dense model on 4,096 GPUs in under 5 s.
#include <benchmark/benchmark.h>

#include "core/util/file_io.h"
#include "sim/tune.h"

namespace {

dsp::ModelSpec LoadModel(const char* rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return dsp::ParseHfConfig(dsp::Json::parse(text.value())).value();
}

dsp::sim::Cluster LoadCluster(const char* rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return dsp::sim::ParseCluster(dsp::Json::parse(text.value(), nullptr, true, true)).value();
}

void RunTune(benchmark::State& state, const char* model_path, int64_t world) {
  dsp::ModelSpec model = LoadModel(model_path);
  dsp::sim::Cluster cluster = LoadCluster("samples/clusters/h100-sxm.json");
  dsp::sim::TuneOptions options;
  options.world_size = world;
  options.seq_len = 4096;
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

}  // namespace
