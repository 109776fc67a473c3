// SPDX-License-Identifier: Apache-2.0
// Speed targets for validate (run: build/release/bench/dsp_bench):
//   one typical config in-process: well under 1 ms;
//   a corpus folder of real configs (148 in development): see docs/validate.md for the one-process timing.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/layout/groups.h"
#include "core/util/file_io.h"
#include "core/validate/validator.h"

namespace {

std::string Sample(const std::string& rel) {
  auto text = dsp::ReadFile(std::string(DSP_SOURCE_DIR) + "/" + rel);
  return text.ok() ? *text : std::string("{}");
}

void BM_ValidateTypicalConfig(benchmark::State& state) {
  std::string text = Sample("samples/configs/folding-tp2-ep4.json");
  dsp::ValidateOptions options;
  options.world_size = 8;
  for (auto _ : state) {
    auto report = dsp::ValidateText("folding-tp2-ep4.json", text, options);
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_ValidateTypicalConfig)->Unit(benchmark::kMicrosecond);

void BM_ValidateZero3Offload(benchmark::State& state) {
  std::string text = Sample("samples/configs/zero3-offload.json");
  dsp::ValidateOptions options;
  options.world_size = 16;
  for (auto _ : state) {
    auto report = dsp::ValidateText("zero3-offload.json", text, options);
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_ValidateZero3Offload)->Unit(benchmark::kMicrosecond);

void BM_ValidateCorpus(benchmark::State& state) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(DSP_SOURCE_DIR) / ".." / "shared" / "corpus" / "deepspeed-configs", ec)) {
    auto text = dsp::ReadFile(e.path().string());
    if (text.ok()) files.emplace_back(e.path().filename().string(), *text);
  }
  if (files.empty()) {
    state.SkipWithError("corpus not found");
    return;
  }
  dsp::ValidateOptions options;
  options.world_size = 16;
  for (auto _ : state) {
    for (const auto& [name, text] : files) {
      auto report = dsp::ValidateText(name, text, options);
      benchmark::DoNotOptimize(report);
    }
  }
  state.counters["configs"] = static_cast<double>(files.size());
}
BENCHMARK(BM_ValidateCorpus)->Unit(benchmark::kMillisecond);

void BM_GroupTables(benchmark::State& state) {
  dsp::ParallelSizes s;
  s.world = static_cast<int>(state.range(0));
  s.tp = 8;
  s.ep = 16;
  s.expert_parallel = true;
  for (auto _ : state) {
    auto tables = dsp::BuildGroupTables(s);
    benchmark::DoNotOptimize(tables);
  }
}
BENCHMARK(BM_GroupTables)->Arg(64)->Arg(1024)->Arg(16384)->Unit(benchmark::kMicrosecond);

}  // namespace
