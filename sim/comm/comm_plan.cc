// SPDX-License-Identifier: Apache-2.0
// Which collectives a plan issues per step, how big they are, on which group, and when: one
// planner per parallelism dimension (planner.h), composed here. Volumes: Megatron, Ulysses and
// ZeRO papers (sim/comm/comm_plan.h); insertion points and reduction groups: DeepSpeed 0.19.6
// compile/passes, moe/ and engine.py; Megatron's from Narayanan et al. 2021 and Korthikanti et al.
// 2022; ZeRO-3's per-release behaviour from DeepSpeed's stage3.py / partition_parameters.py.
#include "sim/comm/comm_plan.h"

#include <algorithm>

#include "sim/comm/planner.h"
#include "sim/cost/param_sharding.h"

namespace dsp::sim {

WireBytes WireBytesPerElement(const SimInput& in) {
  WireBytes w;
  const double bpe = in.workload.bytes_per_param;
  w.gradient = in.workload.gradient_bytes_per_element > 0 ? in.workload.gradient_bytes_per_element : bpe;
  // FSDP2's bf16 parameters keep bf16 gradients but reduce-scatter them in the policy's fp32.
  if (in.engine.bf16_params) w.gradient = 4.0;
  if (in.precision.communication_bytes > 0) w.gradient = in.precision.communication_bytes;
  if (in.plan != nullptr && SequenceShards(in) > 1 && in.engine.framework().sequence_parallel_gradient_dtype) {
    w.gradient = in.precision.seq_parallel_communication_bytes;
  }
  w.param_gather = bpe;
  if (in.precision.torch_autocast && in.model != nullptr) {
    const ParamCounts c = ModelParamCounts(in);
    const double fp32 = static_cast<double>(c.by_family.at(ParamFamily::kEmbedding) +
                                            c.by_family.at(ParamFamily::kNorm));
    const double total = static_cast<double>(std::max<int64_t>(c.total, 1));
    // Only the lower_precision_safe_modules' parameters carry the low comm_dtype.
    const double low = in.precision.autocast_linear_low_precision ? in.precision.autocast_bytes : 4.0;
    w.gradient = w.param_gather = low * (1.0 - fp32 / total) + 4.0 * fp32 / total;
  }
  if (in.zero.stage == 3 && in.zero.quantized_weights) w.param_gather = 1.0 + 4.0 / 8000.0;
  return w;
}

double QuantizationKernelSeconds(const SimInput& in, double elements) {
  const Cluster& c = *in.cluster;
  const double rate = c.gpu.hbm_bytes_per_second * (c.efficiency.memory > 0 ? c.efficiency.memory : 1.0);
  return rate > 0 ? 3.0 * elements / rate + 2 * c.gpu.kernel_overhead_seconds : 0.0;
}

bool Zero3ListCollectives(const SimInput& input) {
  return input.engine.deepspeed_version < ds_release::kZero3AllGatherBase;
}

bool Zero3SynchronousFetch(const SimInput& input) {
  return input.engine.deepspeed_version < ds_release::kZero3Coalesced || input.zero.deepcompile_gathers_in_place;
}

std::vector<PlannedCollective> PlanCollectives(const SimInput& in, const StepTimeOptions& options) {
  if (in.plan == nullptr || in.model == nullptr || in.cluster == nullptr) return {};
  const PlanContext ctx = MakePlanContext(in, options);
  CollectivePlanner plan(in);
  PlanTensorParallel(ctx, plan);
  PlanPipelineParallel(ctx, plan);
  PlanSequenceParallel(ctx, plan);
  PlanExpertParallel(ctx, plan);
  PlanCheckpointPartitionGathers(ctx, plan);
  PlanDataParallel(ctx, plan);
  return plan.Take();
}

}  // namespace dsp::sim
