// SPDX-License-Identifier: Apache-2.0
// How close ds-plan's numbers have come to measured runs of the same kind: for each engine and GPU
// class with measured runs, the mean and worst |error| of the predicted step time and peak memory
// over those runs (samples/runs/modern-runs.tsv: NeMo, Megatron-LM, torchtitan, NeMo AutoModel and
// DeepSpeed runs of 2024-2026, sources in the file). simulate, tune, plan and explore print the band
// next to each prediction, and "not validated" where no run of that kind exists.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/json/document.h"
#include "sim/cost/cluster.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {

struct ErrorBand {
  std::string_view engine;     // EngineName: "megatron-lm", "fsdp2", "deepspeed"
  std::string_view gpu_class;  // GpuClass: "H100", "H200", "A100"
  int step_runs = 0;           // runs with a measured step time
  double step_mean_abs = 0;    // mean |predicted / measured - 1|
  double step_max_abs = 0;     // the worst of them
  int memory_runs = 0;         // runs that published their peak memory (0: none)
  double memory_mean_abs = 0;
  double memory_max_abs = 0;
};

/// The bands, one per engine and GPU class with measured runs. Computed by
/// tests/sim/report/error_band_test.cc from the runs it simulates; that test fails when this table
/// no longer matches what ds-plan predicts for them (it prints the table to paste).
std::span<const ErrorBand> ValidationBands();

/// "H100", "H200", "A100", "B200", "GB200", "V100" from the cluster's GPU name; "" for others.
std::string GpuClass(const GpuSpec& gpu);

/// What validation says about predictions for this engine on this GPU.
struct Accuracy {
  std::string engine;
  std::string gpu_class;
  const ErrorBand* band = nullptr;  // nullptr: no measured run of this kind ("not validated")
};
Accuracy AccuracyFor(Engine engine, const GpuSpec& gpu);

/// "±13% (mean |step-time error| over 19 measured megatron-lm runs on H100; worst 32%)", or
/// "not validated (no measured megatron-lm run on B200)". memory: the peak-memory band instead.
std::string BandText(const Accuracy& accuracy, bool memory);

/// "±21%" or "not validated", for one-line displays (explore's status line).
std::string BandShort(const Accuracy& accuracy, bool memory);

/// {"engine", "gpu_class", "validated", "step_time": {"runs", "mean_abs_error", "max_abs_error"} or
/// null, "peak_memory": the same or null}.
Json AccuracyToJson(const Accuracy& accuracy);

}  // namespace dsp::sim
