// SPDX-License-Identifier: Apache-2.0
// The measured one-GPU training steps scripts/gpu-ground-truth.py writes (steps.tsv: one step a
// row, tab-separated, a header line): what each step ran (the model's config.json, micro-batch,
// sequence, recompute, attention), what it measured (the median step, the host's time to issue
// forward and backward, the allocated peaks) and the profiler trace of that step, if one was taken.
// `ds-plan calibrate --steps` fits a cluster to them; docs/validation.md "One GPU, measured".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace dsp::sim {

struct SweepStep {
  std::string label;   // "llama-3.2-3b mb1 s4096 none sdpa"
  std::string config;  // the model's config.json, as the row names it
  int64_t micro_batch = 1;
  int64_t seq_len = 0;
  bool full_recompute = false;
  bool flash_attention = true;  // "sdpa"; "eager" materializes the scores
  double step_ms = 0;           // median step
  // The host's time to issue each phase (no synchronisation inside the step); 0 when not measured.
  double host_forward_ms = 0, host_backward_ms = 0;
  std::string trace;  // file name of the step's profiler trace; empty when none was taken
};

// Rows whose status is "ok"; the others (oom, skipped) are left out. Errors name the line and
// column: a missing column, a number that does not parse or is out of range.
Result<std::vector<SweepStep>> ParseStepSweep(std::string_view tsv);

}  // namespace dsp::sim
