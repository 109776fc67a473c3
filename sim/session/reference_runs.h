// SPDX-License-Identifier: Apache-2.0
// A measured run of a modern-runs table (samples/runs/modern-runs.tsv's columns: framework, model,
// hardware, tp, pp, vp, cp, ep, zero_or_fsdp, sequence_parallel, micro_batch, grad_accum,
// seq_len, precision, recompute, measured_iter_s, ...) as `ds-plan simulate` runs it: the engine
// from the framework (nemo and megatron-lm: megatron-lm; torchtitan and the rest: fsdp2;
// deepspeed: deepspeed), the DeepSpeed config and the command-line knobs of the row. Shared by
// `ds-plan calibrate` and the validation tests, so both price a row the same way.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/json/document.h"
#include "core/util/result.h"
#include "sim/session/evaluation.h"

namespace dsp::sim {

using TsvRecord = std::map<std::string, std::string>;

// Every line after the header, cells by the header's names (missing trailing cells empty).
// Errors: no header.
Result<std::vector<TsvRecord>> ParseTsvRecords(const std::string& text);

// Whether a table has the modern-runs columns (a "framework" and a "model" column).
bool IsModernRunsTable(const std::vector<TsvRecord>& rows);

struct ModernRunPlan {
  std::string run_id, group, hardware;
  std::string model;  // the row's model file ("models/llama-3.1-8b.json")
  Engine engine = Engine::kDeepSpeed;
  Json config;        // the DeepSpeed config the row describes
  PlanKnobs knobs;    // the flags simulate takes for it
  std::string flags;  // those flags as the command line writes them ("--tp 8 --cp 2")
  double measured_seconds = 0;
  double measured_peak_gb = 0;  // 0: not published
  // The measured peak is what the caching allocator reserved, not what tensors held: torchtitan's
  // log line prints max_reserved_gib (torchtitan train.py and metrics.py GPUMemoryMonitor at
  // 9dec370: reserved_bytes.all.peak, its peak reset every log interval). Compare it with
  // MemoryReport::reserved_peak_bytes.
  bool measured_peak_reserved = false;
};

// Errors name the column: a missing or non-numeric cell.
Result<ModernRunPlan> PlanModernRun(const TsvRecord& row);

}  // namespace dsp::sim
