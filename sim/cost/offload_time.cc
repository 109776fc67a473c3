// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/offload_time.h"

#include <algorithm>

#include "sim/cost/memory_model.h"
#include "sim/cost/param_sharding.h"

namespace dsp::sim {

OffloadTime EstimateOffloadTime(const SimInput& input, double forward_seconds, double backward_seconds) {
  OffloadTime t;
  const ZeroSettings& zero = input.zero;
  const double pcie = input.cluster->host_to_device_bytes_per_second;
  if (zero.deepcompile_offload_opt_states && pcie > 0) {
    // The rank's optimizer partition goes to pinned host memory as forward starts and comes back
    // during backward, on copy streams: what the pass of that direction does not cover is exposed.
    const double copy = EstimateMemory(input).offloaded_optimizer_states_bytes / pcie;
    t.optimizer_states_copy_seconds =
        std::max(0.0, copy - forward_seconds) + std::max(0.0, copy - backward_seconds);
  }
  if (!zero.offload_optimizer && !zero.offload_param) return t;
  double cpu_rate = input.cluster->cpu_optimizer_params_per_second;
  if (pcie <= 0 || cpu_rate <= 0) return t;
  if (const double node = input.cluster->cpu_optimizer_node_params_per_second; node > 0) {
    // The node's ranks step their partitions at the same time on one host (Cluster).
    const int64_t world = std::max<int64_t>(input.plan->sizes.world, 1);
    const int64_t per_node =
        input.cluster->gpus_per_node > 0 ? std::min<int64_t>(input.cluster->gpus_per_node, world) : 1;
    cpu_rate = std::min(cpu_rate, node / static_cast<double>(per_node));
  }
  const double bytes = input.workload.bytes_per_param;
  const double params = PartitionedParamsPerRank(input);
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));

  // A copy to or from pageable host memory returns only when done (CUDA Runtime API, "API
  // synchronization behavior"): without pin_memory nothing hides it.
  // They go through a staging buffer, slower (Cluster::PageableCopyBytesPerSecond).
  const double pageable_factor = pcie / std::max(input.cluster->PageableCopyBytesPerSecond(), 1e-9);
  auto hidden = [&](double copy, double window, bool pinned) {
    return pinned ? std::max(0.0, copy - window) : copy * pageable_factor;
  };
  if (zero.offload_optimizer) {
    // The offloaded share of the partition: its 16-bit gradients go to the host as backward
    // produces them, CPU Adam updates the fp32 master copy, and the new 16-bit parameters come
    // back before the next forward.
    const double share = params * (zero.stage == 3 ? std::clamp(zero.offload_ratio, 0.0, 1.0) : 1.0);
    const double copy = share * bytes / pcie;
    const bool pinned = zero.optimizer_pin_memory;
    if (zero.stage == 3) {
      // stage3.py offloads the reduced partition at the accumulation boundary: once a step,
      // behind the last micro-step's backward.
      t.gradients_to_host_seconds = hidden(copy, backward_seconds, pinned);
    } else {
      // stage_1_and_2.py copy_grads_in_partition: with accumulation every micro-step moves the
      // rank's gradients through a host buffer (the first to the host, the later ones back and
      // to the host again), and the boundary copies them into the fp32 partition: 2g copies
      // (one with g = 1). Without round_robin_gradients a rank's partition is one contiguous
      // slice of the parameters, produced in 1/dp of the backward; round-robin spreads it over
      // the whole backward (_round_robin_reorder).
      const double dp = static_cast<double>(std::max<int64_t>(input.plan->derived.dp, 1));
      const double window = zero.round_robin_gradients ? backward_seconds : backward_seconds / dp;
      if (grad_accum <= 1) {
        t.gradients_to_host_seconds = hidden(copy, window, pinned);
      } else {
        t.gradients_to_host_seconds = hidden(copy, window, pinned) +                // first
                                      (grad_accum - 2) * hidden(2 * copy, window, pinned) +  // middle
                                      hidden(3 * copy, window, pinned);            // boundary
      }
    }
    t.cpu_optimizer_seconds = share / cpu_rate;
    t.parameters_to_device_seconds = pinned ? copy : copy * pageable_factor;
  }
  if (zero.offload_param && zero.stage == 3) {
    // ZeRO-Infinity keeps the 16-bit partition on the host: every forward and every backward of
    // every micro-step copies it to the GPU before the all-gather; prefetching hides the copy
    // behind that pass's compute.
    const double fetch = params * bytes / pcie;
    const bool pinned = zero.param_pin_memory;
    t.parameter_fetch_seconds = grad_accum * (hidden(fetch, forward_seconds, pinned) +
                                              hidden(fetch, backward_seconds, pinned));
  }
  return t;
}

}  // namespace dsp::sim
