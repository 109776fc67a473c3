// SPDX-License-Identifier: Apache-2.0
// Speed target for the graph IR (run: build/release/bench/dsp_bench --benchmark_filter=Graph):
//   building the 80-layer Llama-3-70B graph well under 100 ms (it is the first step of every
//   simulated plan once the passes exist), plus printing it and parsing it back.
#include <benchmark/benchmark.h>

#include "core/util/file_io.h"
#include "sim/graph/builder.h"
#include "sim/graph/text_format.h"
#include "sim/graph/verifier.h"

namespace {

dsp::ModelSpec LoadModel(const char* rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return dsp::ParseHfConfig(dsp::Json::parse(text.value())).value();
}

void BM_GraphBuildLlama70b(benchmark::State& state) {
  const dsp::ModelSpec model = LoadModel("samples/models/llama-3-70b.json");
  for (auto _ : state) {
    auto graph = dsp::sim::graph::BuildModelGraph(model);
    benchmark::DoNotOptimize(graph);
  }
}
BENCHMARK(BM_GraphBuildLlama70b)->Unit(benchmark::kMillisecond);

void BM_GraphBuildQwen3Moe(benchmark::State& state) {
  const dsp::ModelSpec model = LoadModel("samples/models/qwen3-30b-a3b.json");
  for (auto _ : state) {
    auto graph = dsp::sim::graph::BuildModelGraph(model);
    benchmark::DoNotOptimize(graph);
  }
}
BENCHMARK(BM_GraphBuildQwen3Moe)->Unit(benchmark::kMillisecond);

void BM_GraphVerifyLlama70b(benchmark::State& state) {
  const auto graph = dsp::sim::graph::BuildModelGraph(LoadModel("samples/models/llama-3-70b.json"));
  for (auto _ : state) {
    auto status = dsp::sim::graph::VerifyGraph(*graph);
    benchmark::DoNotOptimize(status);
  }
}
BENCHMARK(BM_GraphVerifyLlama70b)->Unit(benchmark::kMillisecond);

void BM_GraphPrintParseLlama70b(benchmark::State& state) {
  const auto graph = dsp::sim::graph::BuildModelGraph(LoadModel("samples/models/llama-3-70b.json"));
  for (auto _ : state) {
    auto parsed = dsp::sim::graph::ParseGraph(dsp::sim::graph::PrintGraph(*graph));
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK(BM_GraphPrintParseLlama70b)->Unit(benchmark::kMillisecond);

}  // namespace
