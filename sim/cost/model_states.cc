// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/model_states.h"

#include <algorithm>

namespace dsp::sim {
namespace {

// DeepSpeed's estimators multiply host memory by additional_buffer_factor=1.5 (pinned staging
// buffers and allocator slack on the host).
constexpr double kDeepSpeedHostBufferFactor = 1.5;
// The fp32 gradient partition ZeRO-Offload keeps on the host for DeepSpeedCPUAdam
// (single_partition_of_fp32_groups[i].grad in stage_1_and_2.py; fp32_partitioned_groups_flat in
// stage3.py).
constexpr double kFp32GradBytes = 4;

}  // namespace

StateBytesPerParam BytesPerParam(MemoryConvention convention) {
  switch (convention) {
    case MemoryConvention::kZeroPaper:
      return {2, 2, 12};
    case MemoryConvention::kDeepSpeedEstimator:
      return {2, 2 + kFp32GradBytes, 12};
  }
  return {2, 2, 12};
}

ModelStateBytes ModelStatesPerRank(double params, int64_t zero_group_size, const ZeroSettings& zero,
                                   MemoryConvention convention, double optimizer_bytes) {
  const double n = static_cast<double>(std::max<int64_t>(zero_group_size, 1));
  StateBytesPerParam b = BytesPerParam(convention);
  b.optimizer = optimizer_bytes;
  const bool estimator = convention == MemoryConvention::kDeepSpeedEstimator;
  int stage = std::clamp(zero.stage, 0, 3);
  // DeepSpeed has one estimator for stages 1 and 2 (estimate_zero2_model_states_mem_needs).
  if (estimator && stage == 1) stage = 2;

  ModelStateBytes out;
  out.parameters_bytes = b.parameters * params / (stage >= 3 ? n : 1);
  double grad_bytes_per_param = b.gradients;
  // estimate_zero3 counts 18 bytes per parameter in all: 2 params16 + 4 grads32 + 12 optimizer.
  if (estimator && stage == 3) grad_bytes_per_param = kFp32GradBytes;
  out.gradients_bytes = grad_bytes_per_param * params / (stage >= 2 ? n : 1);
  out.optimizer_states_bytes = b.optimizer * params / (stage >= 1 ? n : 1);

  if (zero.offload_optimizer && stage >= 1) {
    const double ratio = stage == 3 ? std::clamp(zero.offload_ratio, 0.0, 1.0) : 1.0;
    const double moved_optimizer = ratio * out.optimizer_states_bytes;
    out.optimizer_states_bytes -= moved_optimizer;
    double moved_gradients = 0;
    if (stage >= 2) moved_gradients = ratio * out.gradients_bytes;
    out.gradients_bytes -= moved_gradients;
    if (estimator) {
      out.cpu_bytes += (moved_optimizer + moved_gradients) * kDeepSpeedHostBufferFactor;
    } else {
      // The ZeRO paper counts no fp32 gradients; DeepSpeed still builds them on the host.
      out.cpu_bytes += moved_optimizer + ratio * kFp32GradBytes * params / n;
    }
  }
  if (zero.offload_param && stage == 3) {
    out.cpu_bytes += out.parameters_bytes * (estimator ? kDeepSpeedHostBufferFactor : 1.0);
    out.parameters_bytes = 0;
  }
  return out;
}

}  // namespace dsp::sim
