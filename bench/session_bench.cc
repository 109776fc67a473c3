// SPDX-License-Identifier: Apache-2.0
// Speed target for explore (run: build/release/bench/dsp_bench --benchmark_filter=Session): one
// edit-evaluate cycle (apply the edit, validate, build the plan and every group table, memory,
// step time) for Llama-3-70B on 4,096 ranks well under 50 ms, so a key in the full-screen UI
// answers before the next frame. docs/explore.md records the measured figure.
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "core/util/file_io.h"
#include "sim/session/dials.h"
#include "sim/session/session.h"

namespace {

std::string Sample(const std::string& rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return text.ok() ? *text : std::string("{}");
}

std::unique_ptr<dsp::sim::Session> Llama70bOn4096() {
  auto model = dsp::ParseHfConfig(dsp::Json::parse(Sample("samples/models/llama-3-70b.json")));
  auto cluster = dsp::sim::ParseCluster(dsp::Json::parse(Sample("samples/clusters/h100-sxm.json"), nullptr, true, true));
  dsp::sim::PlanKnobs knobs;
  knobs.nodes = 512;  // x 8 GPUs
  return std::make_unique<dsp::sim::Session>("zero3-offload.json", Sample("samples/configs/zero3-offload.json"),
                                             std::move(model).value(), std::move(cluster).value(), knobs);
}

// One edit and its evaluation; alternating values so every iteration changes the config.
void BM_SessionEditEvaluateLlama70bOn4096Ranks(benchmark::State& state) {
  auto session = Llama70bOn4096();
  int i = 0;
  for (auto _ : state) {
    auto r = session->Set(++i % 2 ? "tensor_parallel.autotp_size=8" : "tensor_parallel.autotp_size=4");
    benchmark::DoNotOptimize(r);
  }
  state.counters["world"] = static_cast<double>(session->now().world_size);
  state.counters["has_numbers"] = session->now().has_numbers() ? 1 : 0;  // the whole cycle ran
}
BENCHMARK(BM_SessionEditEvaluateLlama70bOn4096Ranks)->Unit(benchmark::kMillisecond);

// A knob step from the full-screen UI (tensor parallel dial, batch kept consistent).
void BM_SessionDialStepLlama70bOn4096Ranks(benchmark::State& state) {
  auto session = Llama70bOn4096();
  const dsp::sim::Dial& tp = dsp::sim::Dials()[2];
  int i = 0;
  for (auto _ : state) {
    auto r = dsp::sim::StepDial(*session, tp, ++i % 2 ? +1 : -1);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_SessionDialStepLlama70bOn4096Ranks)->Unit(benchmark::kMillisecond);

// Undo reuses the evaluation it kept: no re-evaluation.
void BM_SessionUndoRedo(benchmark::State& state) {
  auto session = Llama70bOn4096();
  (void)session->Set("tensor_parallel.autotp_size=8");
  for (auto _ : state) {
    benchmark::DoNotOptimize(session->Undo());
    benchmark::DoNotOptimize(session->Redo());
  }
}
BENCHMARK(BM_SessionUndoRedo)->Unit(benchmark::kMicrosecond);

}  // namespace
