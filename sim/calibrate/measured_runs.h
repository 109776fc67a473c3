// SPDX-License-Identifier: Apache-2.0
// Measured training runs as ds-plan reads them (a TSV with one run a row; the published set ships
// as samples/runs/published-runs.tsv) and the cost model's prediction for each: the input of
// `ds-plan calibrate`, docs/validation.md and the validation tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model_spec.h"
#include "core/util/result.h"
#include "sim/cost/cluster.h"
#include "sim/cost/memory_model.h"
#include "sim/cost/sim_input.h"
#include "sim/cost/step_time.h"

namespace dsp::sim {

// One row. Columns by header name; the published-runs columns (run_id ... measured_iter_s) plus
// engine, zero_stage, attention, deepspeed_version, model_type and dropout (docs/calibrate.md).
struct MeasuredRun {
  std::string run_id;
  std::string source;
  std::string model_type = "gpt2";  // gpt2 (learned positions) or bloom (ALiBi)
  int64_t layers = 0, hidden = 0, heads = 0, ffn = 0, vocab = 0, seq_len = 0;
  int64_t gpus = 0, tp = 1, pp = 1, dp = 1;
  bool megatron_sp = false;
  int virtual_stages = 1;
  int64_t micro_batch = 1, global_batch = 1;
  Recompute recompute = Recompute::kNone;
  std::string precision = "fp16";
  double dropout = 0.1;
  Engine engine = Engine::kMegatronLm;
  int zero_stage = 0;
  bool flash_attention = false;
  std::string deepspeed_version;  // empty: the newest
  double measured_seconds = 0;    // one iteration (optimizer step)
  double calculon_seconds = 0;    // Calculon's prediction for the run, where it has one (0: none)
};

// Parses the TSV; errors name the line and column.
Result<std::vector<MeasuredRun>> ParseMeasuredRuns(const std::string& tsv);

struct RunPrediction {
  double seconds = 0;
  double error = 0;  // (predicted - measured) / measured
  MemoryReport memory;
  TimeReport time;
};

// What a run describes: the DeepSpeed config (batch triple, precision, ZeRO stage), its plan and
// model, and the SimInput over them on `cluster` (which must outlive it). Not copyable: `input`
// points into the others.
struct RunSetup {
  Json config;
  Plan plan;
  ModelSpec model;
  SimInput input;
  RunSetup() = default;
  RunSetup(const RunSetup&) = delete;
  RunSetup& operator=(const RunSetup&) = delete;
};
// Errors: the layout does not divide the world, or the batch does not split.
Result<std::unique_ptr<RunSetup>> SetUpRun(const MeasuredRun& run, const Cluster& cluster);

// The run costed on `cluster`.
Result<RunPrediction> PredictRun(const MeasuredRun& run, const Cluster& cluster);

// The GPT-style model of a row (gpt2 or bloom), as ParseHfConfig would read its config.json.
ModelSpec RunModel(const MeasuredRun& run);

}  // namespace dsp::sim
