// SPDX-License-Identifier: Apache-2.0
// Time that CPU offload adds to a step (ZeRO-Offload / ZeRO-Infinity): PCIe copies of gradients and
// parameters and the CPU optimizer step. None of it is a collective, but all of it sits on the
// step's path unless it hides behind GPU compute.
#pragma once

#include "sim/cost/sim_input.h"

namespace dsp::sim {

struct OffloadTime {
  double gradients_to_host_seconds = 0;     // per step, the part not hidden behind backward
  double cpu_optimizer_seconds = 0;         // per step
  double parameters_to_device_seconds = 0;  // per step: updated 16-bit parameters back to the GPU
  double parameter_fetch_seconds = 0;       // per step: offload_param fetches not hidden by compute
  // per step: DeepCompile's offload_opt_states copies (out in forward, back in backward) not hidden
  double optimizer_states_copy_seconds = 0;
  double total_seconds() const {
    return gradients_to_host_seconds + cpu_optimizer_seconds + parameters_to_device_seconds +
           parameter_fetch_seconds + optimizer_states_copy_seconds;
  }
};

// `forward_seconds` / `backward_seconds` are one micro-step's compute, the window prefetches and
// gradient copies can hide behind.
OffloadTime EstimateOffloadTime(const SimInput& input, double forward_seconds, double backward_seconds);

}  // namespace dsp::sim
