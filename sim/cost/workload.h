// SPDX-License-Identifier: Apache-2.0
// What one training step does, beyond the parallel layout: sequence length, batch, recompute,
// optimizer and memory accounting convention.
#pragma once

#include <cstdint>
#include <string_view>

namespace dsp::sim {

enum class Recompute { kNone, kSelective, kFull };

// How model-state bytes per parameter are counted.
enum class MemoryConvention {
  kZeroPaper,            // mixed-precision Adam: 2 (fp16/bf16 params) + 2 (grads) + 12 (fp32 master, m, v)
  kDeepSpeedEstimator,   // deepspeed.runtime.zero estimate_zero{2,3}_model_states_mem_needs conventions
};

struct Workload {
  int64_t seq_len = 4096;
  int64_t micro_batch = 1;          // per GPU
  int64_t grad_accum = 1;           // micro-steps per optimizer step
  Recompute recompute = Recompute::kNone;
  MemoryConvention convention = MemoryConvention::kZeroPaper;
  int bytes_per_param = 2;          // bf16/fp16 weights and activations
  // The ZeRO paper's K: optimizer-state bytes per parameter for mixed precision (fp32 master
  // weights plus the optimizer's fp32 states): Adam/AdamW/LAMB 12, SGD with momentum and Lion 8,
  // plain SGD 4. ReadOptimizerStateBytes (sim/cost/sim_input.h) reads it from the config.
  double optimizer_state_bytes_per_param = 12;
  // Bytes of one gradient element as it is accumulated and reduced: 0 = bytes_per_param; 4 with
  // an fp32 accumulation buffer (DeepSpeed's BF16Optimizer, Megatron's bf16 main_grad).
  double gradient_bytes_per_element = 0;
};

std::string_view RecomputeName(Recompute recompute);            // "none", "selective", "full"
std::string_view ConventionName(MemoryConvention convention);   // "zero-paper", "deepspeed"

}  // namespace dsp::sim
