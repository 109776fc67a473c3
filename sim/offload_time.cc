#include "sim/offload_time.h"

#include <algorithm>

#include "sim/param_sharding.h"

namespace dsp::sim {

OffloadTime EstimateOffloadTime(const SimInput& input, double forward_seconds, double backward_seconds) {
  OffloadTime t;
  const ZeroSettings& zero = input.zero;
  if (!zero.offload_optimizer && !zero.offload_param) return t;
  const double pcie = input.cluster->host_to_device_bytes_per_second;
  const double cpu_rate = input.cluster->cpu_optimizer_params_per_second;
  if (pcie <= 0 || cpu_rate <= 0) return t;
  const double bytes = input.workload.bytes_per_param;
  const double params = PartitionedParamsPerRank(input);
  const double grad_accum = static_cast<double>(std::max<int64_t>(input.workload.grad_accum, 1));

  if (zero.offload_optimizer) {
    // The offloaded share of the partition: its 16-bit gradients go to the host as backward
    // produces them (hidden behind the last micro-step's backward), CPU Adam updates the fp32
    // master copy, and the new 16-bit parameters come back before the next forward.
    const double share = params * (zero.stage == 3 ? std::clamp(zero.offload_ratio, 0.0, 1.0) : 1.0);
    t.gradients_to_host_seconds = std::max(0.0, share * bytes / pcie - backward_seconds);
    t.cpu_optimizer_seconds = share / cpu_rate;
    t.parameters_to_device_seconds = share * bytes / pcie;
  }
  if (zero.offload_param && zero.stage == 3) {
    // ZeRO-Infinity keeps the 16-bit partition on the host: every forward and every backward of
    // every micro-step copies it to the GPU before the all-gather; prefetching hides the copy
    // behind that pass's compute.
    const double fetch = params * bytes / pcie;
    t.parameter_fetch_seconds = grad_accum * (std::max(0.0, fetch - forward_seconds) +
                                              std::max(0.0, fetch - backward_seconds));
  }
  return t;
}

}  // namespace dsp::sim
