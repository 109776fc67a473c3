// SPDX-License-Identifier: Apache-2.0
// Speed target for `ds-plan visualize graph` (run: build/release/bench/dsp_bench
// --benchmark_filter=Render): Llama-3-70B with two layers drawn (the other 78 collapsed) laid out
// and rendered to SVG well under 1 s, since the dot layout is the slow part of the command.
#include <benchmark/benchmark.h>

#include "core/util/file_io.h"
#include "sim/graph/builder.h"
#include "sim/render/graph_json.h"
#include "sim/render/graphviz.h"

namespace {

dsp::sim::graph::Graph Llama70b() {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/samples/models/llama-3-70b.json");
  auto model = dsp::ParseHfConfig(dsp::Json::parse(text.value())).value();
  return std::move(dsp::sim::graph::BuildModelGraph(model)).value();
}

void BM_RenderSvgLlama70bTwoLayers(benchmark::State& state) {
  const auto graph = Llama70b();
  dsp::sim::render::RenderOptions options;
  options.layers = dsp::sim::render::LayerRange{0, 1};
  for (auto _ : state) {
    auto svg = dsp::sim::render::RenderGraph(graph, options, dsp::sim::render::Format::kSvg);
    benchmark::DoNotOptimize(svg);
  }
}
BENCHMARK(BM_RenderSvgLlama70bTwoLayers)->Unit(benchmark::kMillisecond);

void BM_RenderDotLlama70bAllLayers(benchmark::State& state) {
  const auto graph = Llama70b();
  for (auto _ : state) {
    auto dot = dsp::sim::render::RenderGraph(graph, {}, dsp::sim::render::Format::kDot);
    benchmark::DoNotOptimize(dot);
  }
}
BENCHMARK(BM_RenderDotLlama70bAllLayers)->Unit(benchmark::kMillisecond);

void BM_GraphJsonLlama70b(benchmark::State& state) {
  const auto graph = Llama70b();
  for (auto _ : state) {
    auto json = dsp::sim::render::GraphToJson(graph).dump();
    benchmark::DoNotOptimize(json);
  }
}
BENCHMARK(BM_GraphJsonLlama70b)->Unit(benchmark::kMillisecond);

}  // namespace
