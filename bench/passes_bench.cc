// SPDX-License-Identifier: Apache-2.0
// Speed target for the passes (run: build/release/bench/dsp_bench --benchmark_filter=Passes):
// building and rewriting an 80-layer model under 100 ms. Each iteration builds the graph and runs
// the whole pipeline a config implies, verifier after every pass included.
#include <benchmark/benchmark.h>

#include "core/util/file_io.h"
#include "sim/graph/builder.h"
#include "sim/passes/from_config.h"

namespace {

dsp::ModelSpec LoadModel(const char* rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return dsp::ParseHfConfig(dsp::Json::parse(text.value())).value();
}

void RunPipeline(benchmark::State& state, const char* model_file, const char* config_text) {
  const dsp::ModelSpec model = LoadModel(model_file);
  const dsp::Json config = dsp::Json::parse(config_text);
  for (auto _ : state) {
    auto graph = dsp::sim::graph::BuildModelGraph(model);
    auto pipeline = dsp::sim::passes::PipelineForConfig({.model = &model, .config = &config});
    auto changed = pipeline->Run(*graph);
    if (!changed.ok()) state.SkipWithError(changed.error().message.c_str());
    benchmark::DoNotOptimize(graph);
  }
}

// Llama-3-70B (80 layers): AutoTP 8 and ZeRO-3 (a gather, release and reduce-scatter for each
// of the 723 parameters).
void BM_PassesLlama70bTp8Zero3(benchmark::State& state) {
  RunPipeline(state, "samples/models/llama-3-70b.json",
              R"({"tensor_parallel": {"autotp_size": 8}, "zero_optimization": {"stage": 3}})");
}
BENCHMARK(BM_PassesLlama70bTp8Zero3)->Unit(benchmark::kMillisecond);

// Llama-3-70B: Ulysses SP 8 and ZeRO-1.
void BM_PassesLlama70bSp8Zero1(benchmark::State& state) {
  RunPipeline(state, "samples/models/llama-3-70b.json",
              R"({"sequence_parallel_size": 8, "zero_optimization": {"stage": 1}})");
}
BENCHMARK(BM_PassesLlama70bSp8Zero1)->Unit(benchmark::kMillisecond);

// Mixtral 8x7B: folded AutoEP 4 x AutoTP 2 and ZeRO-1.
void BM_PassesMixtralFoldingZero1(benchmark::State& state) {
  RunPipeline(state, "samples/models/mixtral-8x7b.json",
              R"({"expert_parallel": {"enabled": true, "autoep_size": 4},
                  "tensor_parallel": {"autotp_size": 2}, "zero_optimization": {"stage": 1}})");
}
BENCHMARK(BM_PassesMixtralFoldingZero1)->Unit(benchmark::kMillisecond);

}  // namespace
