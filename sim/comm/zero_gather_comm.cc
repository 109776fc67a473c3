// SPDX-License-Identifier: Apache-2.0
// ZeRO's parameter all-gathers: after the step at ZeRO 1/2 (each rank steps its partition, then
// the updated 16-bit parameters are all-gathered), and module by module at ZeRO 3 (DeepSpeed
// 0.19.6 zero/partitioned_param_coordinator.py fetch_sub_module, partition_parameters.py), with
// hpZ, MiCS and qwZ (ZeRO++: Wang et al. 2023 §3) and the releases before 0.6.0.
#include <algorithm>
#include <tuple>
#include <vector>

#include "sim/comm/data_parallel_internal.h"
#include "sim/cost/param_sharding.h"

namespace dsp::sim::data_parallel {
namespace {

// One call per module (fetch_sub_module gathers a module's own parameters: one call per parameter
// before 0.6.0, one coalesced call per module after; the biases and norms below the persistence
// threshold never move, so both count the module's weight). A module is kept, not regathered in
// backward after a recomputed forward, when the parameters used between its recomputation and its
// backward (DeepSpeed's reuse distance: the later modules of the layer, once in the recompute and
// once in backward) stay under max_reuse_distance. Without AutoEP a MoE layer's routed experts are
// modules like any other (transformers' Mixtral and Qwen MoE blocks: an nn.Linear per expert
// weight, each with its own hook, gathered over the data-parallel group); AutoEP's go over edp in
// their own calls (PlanZero3Gathers).
Zero3Layer ComputeZero3Layer(const SimInput& in, bool moe) {
  // The first layer of the kind stands for all of them (attention kinds differ little in module
  // count: a linear-attention layer has as many projections as an attention one).
  const ModelSpec& m = *in.model;
  int64_t layer = 0;
  while (layer < m.num_hidden_layers && m.IsMoeLayer(layer) != moe) ++layer;
  Zero3Layer z;
  if (layer >= m.num_hidden_layers) return z;
  std::vector<double> weights;
  for (const ParamTensor& p : LayerParameterTensors(m, layer)) {
    if (p.family == ParamFamily::kRoutedExperts && in.plan->sizes.expert_parallel) continue;
    const double numel = static_cast<double>(p.numel()) / ShardDivisorOf(p.family, in);
    if (numel < in.zero.param_persistence_threshold) continue;
    weights.push_back(numel);
  }
  z.modules = static_cast<double>(weights.size());
  double after = 0;
  for (auto it = weights.rbegin(); it != weights.rend(); ++it) {
    if (2.0 * after >= in.zero.max_reuse_distance) z.regathered_elements += *it;
    after += *it;
    z.elements += *it;
  }
  return z;
}

// Parameters are gathered module by module before forward, again before a recomputed forward,
// and again before backward (all of it without recompute; with it, the modules whose reuse
// distance reaches max_reuse_distance). Releases before 0.6.0 fetch synchronously (critical
// path); later ones prefetch on a side stream behind compute.
void PlanZero3Gathers(const PlanContext& ctx, const RankParams& params, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ZeroSettings& zero = in.zero;
  const GroupKind dense_group = ZeroPartitionGroup(*in.plan, false);
  const bool mics = zero.mics_shard_size > 0;
  const bool hpz = !mics && zero.hpz_partition_size > 1;
  const bool prefetch = zero.prefetch_bucket_size > 0 && !Zero3SynchronousFetch(in);
  const CommSchedule fwd = prefetch ? CommSchedule::kForwardOverlap : CommSchedule::kCritical;
  const CommSchedule bwd = prefetch ? CommSchedule::kBackwardOverlap : CommSchedule::kCritical;
  const double copies = Zero3ListCollectives(in) ? 1.0 : 0.0;
  const double gathered = params.dense - params.zero3_persistent;
  const Zero3Layer dense_layer = DescribeZero3Layer(in, false);
  const Zero3Layer moe_layer = DescribeZero3Layer(in, true);
  const double passes = ctx.forward_passes;
  // Calls per pass: the modules of each kind of layer on the stage, and the embedding and head as
  // one more module.
  const double calls = Zero3LayerCalls(in, ctx.dense_layers, ctx.moe_layers) + 1.0;
  // qwZ: int8 values and one fp32 scale per group of at most 8000 (CUDAQuantizer); the partition
  // is quantized before and the gathered buffer dequantized after each call.
  const WireBytes wire = WireBytesPerElement(in);
  const double bytes_per_call = gathered * wire.param_gather / calls;
  const double quant = zero.quantized_weights ? QuantizationKernelSeconds(in, gathered / calls) : 0.0;
  const double layer_elements = dense_layer.elements * ctx.dense_layers + moe_layer.elements * ctx.moe_layers;
  const double regathered = dense_layer.regathered_elements * ctx.dense_layers +
                            moe_layer.regathered_elements * ctx.moe_layers;
  const double bwd_share = in.workload.recompute != Recompute::kFull || layer_elements <= 0
                               ? 1.0
                               : regathered / layer_elements;
  // The hooks' host work per fetched module (cluster host.zero3_fetch_seconds) holds the gather
  // stream between gathers; spread over the calls that stand for the modules. DeepCompile replaces
  // the hooks with gather ops in the compiled graph.
  const double fetch_host = zero.deepcompile ? 0.0 : in.cluster->host.zero3_fetch_seconds;
  const double fetches = dense_layer.modules * ctx.dense_layers + moe_layer.modules * ctx.moe_layers + 1.0;
  const double host = fetch_host * fetches / calls;
  if (mics) {
    // MiCS gathers inside the shard group.
    plan.AddOnBlocks("zero3_all_gather_fwd", CollectiveKind::kAllGather, dense_group, zero.mics_shard_size, false,
                     bytes_per_call, calls * passes, fwd, quant + host);
    plan.AddOnBlocks("zero3_all_gather_bwd", CollectiveKind::kAllGather, dense_group, zero.mics_shard_size, false,
                     bytes_per_call, calls * bwd_share, bwd, quant + host);
  } else if (hpz) {
    // hpZ: the step's first forward gathers the primary partition over the whole group; it leaves
    // the secondary copy behind, which every later gather (recomputed forward, backward, the next
    // micro-steps) reads inside the hpZ block (all_gather_coalesced with use_secondary_tensor).
    const double micro = static_cast<double>(std::max<int64_t>(in.workload.grad_accum, 1));
    plan.Add("zero3_all_gather_fwd", CollectiveKind::kAllGather, dense_group, bytes_per_call, calls / micro, fwd,
             StageScope::kAll, copies, quant + host);
    plan.DropFloor();  // one first prefetch per micro-step: hpz_all_gather_fwd keeps it
    plan.AddOnBlocks("hpz_all_gather_fwd", CollectiveKind::kAllGather, dense_group, zero.hpz_partition_size, false,
                     bytes_per_call, calls * (passes - 1.0 / micro), fwd, quant + host);
    plan.AddOnBlocks("hpz_all_gather_bwd", CollectiveKind::kAllGather, dense_group, zero.hpz_partition_size, false,
                     bytes_per_call, calls * bwd_share, bwd, quant + host);
  } else {
    plan.Add("zero3_all_gather_fwd", CollectiveKind::kAllGather, dense_group, bytes_per_call, calls * passes, fwd,
             StageScope::kAll, copies, quant + host);
    plan.Add("zero3_all_gather_bwd", CollectiveKind::kAllGather, dense_group, bytes_per_call, calls * bwd_share, bwd,
             StageScope::kAll, copies, quant + host);
  }
  if (ctx.moe_layers > 0 && in.plan->sizes.expert_parallel) {
    for (auto [purpose, schedule, n] : {std::tuple{"zero3_all_gather_fwd", fwd, passes},
                                        std::tuple{"zero3_all_gather_bwd", bwd, 1.0}}) {
      plan.Add(purpose, CollectiveKind::kAllGather, GroupKind::kEdp,
               params.routed * wire.param_gather / ctx.moe_layers, ctx.moe_layers * n, schedule, StageScope::kAll,
               copies, fetch_host);
    }
  }
}

}  // namespace

Zero3Layer DescribeZero3Layer(const SimInput& in, bool moe) {
  if (in.link_cache == nullptr) return ComputeZero3Layer(in, moe);
  PlanMemo& memo = in.link_cache->memo;
  const int i = moe ? 1 : 0;
  if (!memo.has_zero3[i]) {
    const Zero3Layer z = ComputeZero3Layer(in, moe);
    memo.zero3_modules[i] = z.modules;
    memo.zero3_elements[i] = z.elements;
    memo.zero3_regathered[i] = z.regathered_elements;
    memo.has_zero3[i] = true;
  }
  return Zero3Layer{memo.zero3_modules[i], memo.zero3_elements[i], memo.zero3_regathered[i]};
}

double Zero3LayerCalls(const SimInput& in, double dense_layers, double moe_layers) {
  return std::max(1.0, DescribeZero3Layer(in, false).modules) * dense_layers +
         std::max(1.0, DescribeZero3Layer(in, true).modules) * moe_layers;
}

void PlanZeroParameterGathers(const PlanContext& ctx, const RankParams& params, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ZeroSettings& zero = in.zero;
  if (zero.stage == 1 || zero.stage == 2) {
    const double bpe = ctx.bytes_per_element;
    plan.AddBucketed("zero_param_all_gather", CollectiveKind::kAllGather, ZeroPartitionGroup(*in.plan, false),
                     params.dense, bpe, zero.allgather_bucket_size, CommSchedule::kStepExposed);
    plan.AddBucketed("zero_param_all_gather", CollectiveKind::kAllGather, GroupKind::kEdp, params.routed, bpe,
                     zero.allgather_bucket_size, CommSchedule::kStepExposed);
  } else if (zero.stage == 3) {
    PlanZero3Gathers(ctx, params, plan);
  }
}

}  // namespace dsp::sim::data_parallel
