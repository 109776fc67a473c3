// SPDX-License-Identifier: Apache-2.0
// Model-state memory (parameters, gradients, optimizer states) of a number of parameters under a
// ZeRO stage, CPU offload and an accounting convention. Works on a bare parameter count so the
// ZeRO paper's figures can be checked directly; EstimateMemory applies it per parameter family with
// each family's TP/EP share and ZeRO partition group.
//
// Sources: the ZeRO paper ( Rajbhandari et al. 2020, §3 and Fig. 1: 2 + 2 + K
// bytes per parameter, K = 12) and DeepSpeed's ( estimate_zero2_model_states_mem_needs and
// estimate_zero3_model_states_mem_needs, deepspeed/runtime/zero/stage_1_and_2.py and stage3.py at
// edaa722); offload placement follows ZeRO-Offload (Ren et al. 2021) as DeepSpeed implements it.
#pragma once

#include <cstdint>

#include "sim/cost/sim_input.h"
#include "sim/cost/workload.h"

namespace dsp::sim {

// Bytes one parameter's states take before any partitioning.
struct StateBytesPerParam {
  double parameters = 0;  // 16-bit weights
  double gradients = 0;   // 16-bit gradients (+ the fp32 gradient partition where counted on GPU)
  double optimizer = 0;   // fp32 master weights + Adam momentum + variance
};

// kZeroPaper: 2 + 2 + 12. kDeepSpeedEstimator: 2 + 6 + 12 (its "18 = 2 grads16 + 4 grads32 + 4
// params32 + 8 optimizer32" beside the resident 2-byte weights); at stage 3 DeepSpeed counts 18 in
// all, so the 16-bit gradient drops out there (see ModelStatesPerRank).
StateBytesPerParam BytesPerParam(MemoryConvention convention);

struct ModelStateBytes {
  double parameters_bytes = 0;       // on the GPU
  double gradients_bytes = 0;        // on the GPU
  double optimizer_states_bytes = 0; // on the GPU
  double cpu_bytes = 0;              // moved to host (or NVMe) memory by offload
  double gpu_bytes() const { return parameters_bytes + gradients_bytes + optimizer_states_bytes; }
};

// Model states on one rank for `params` parameters that the rank holds before ZeRO (already divided
// by TP or EP), partitioned by ZeRO over `zero_group_size` ranks.
//
// kZeroPaper (Ψ = params, N = zero_group_size):
//   stage 0: 2Ψ + 2Ψ + 12Ψ          stage 2: 2Ψ + (2Ψ + 12Ψ)/N
//   stage 1: 2Ψ + 2Ψ + 12Ψ/N        stage 3: (2Ψ + 2Ψ + 12Ψ)/N
// kDeepSpeedEstimator: stages 1 and 2 are one estimator (estimate_zero2): 2Ψ + 18Ψ/N; stage 3:
//   18Ψ/N (+ 4 x largest layer, added by the caller: DeepSpeedZero3LayerBytes); stage 0 has no
//   DeepSpeed estimator and is the stage-2 formula at N = 1 (20Ψ).
//
// offload_optimizer (stages 1-3; DeepSpeed ignores it at stage 0): the optimizer states go to the
// host, and so does the fp32 gradient partition DeepSpeedCPUAdam reads (4Ψ/N; in kZeroPaper it
// is host-only, in kDeepSpeedEstimator it leaves the GPU's gradient bytes). From stage 2 on the
// reduced 16-bit gradient partition is copied straight into that host buffer, so the GPU keeps no
// gradient partition (estimate_zero2 with cpu_offload: gpu_mem = 2Ψ; stage 3: 2Ψ/N). At stage 1
// the full 16-bit gradients stay on the GPU. At stage 3 `offload_ratio` offloads only that fraction.
// offload_param (stage 3 only): the 16-bit parameter partition goes to the host.
// kDeepSpeedEstimator host bytes carry DeepSpeed's additional_buffer_factor 1.5.
// `optimizer_bytes` is K, the optimizer-state bytes per parameter (Workload::optimizer_state_bytes_per_param).
ModelStateBytes ModelStatesPerRank(double params, int64_t zero_group_size, const ZeroSettings& zero,
                                   MemoryConvention convention, double optimizer_bytes = 12);

// DeepSpeed's ZeRO-3 "largest_layer_memory = 4 * largest_layer_params": the gathered 16-bit
// parameters and gradients of the largest module (estimate_zero3_model_states_mem_needs).
inline double DeepSpeedZero3LayerBytes(double largest_layer_params) {
  return 4.0 * largest_layer_params;
}

}  // namespace dsp::sim
