// SPDX-License-Identifier: Apache-2.0
// Data parallelism's gradient reduction, as the framework's GradientSync does it: DeepSpeed's
// engine and ZeRO optimizers (DeepSpeed 0.19.6 runtime/engine.py, zero/stage_1_and_2.py,
// zero/stage3.py, zero/mics.py; ZeRO++ qgZ in stage3.py __avg_scatter_grads; DeepCompile's z1/z2
// passes) or Megatron-LM's DistributedDataParallel. Volumes: Rajbhandari et al. 2020 §7.
#include <algorithm>

#include "core/model/model_spec.h"
#include "sim/comm/data_parallel_internal.h"
#include "sim/cost/param_sharding.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {
namespace data_parallel {

RankParams CountRankParams(const SimInput& in) {
  const ModelSpec& m = *in.model;
  const ParamCounts c = ModelParamCounts(in);
  auto family = [&](ParamFamily f) { return static_cast<double>(c.by_family.at(f)); };
  const ParallelSizes& sizes = in.plan->sizes;
  const double tp = sizes.tp, ep = sizes.ep, pp = sizes.pp;
  const bool autoep = sizes.expert_parallel;
  // Megatron-Core's experts: the shared expert TP-split, each routed expert over etp ranks.
  const bool megatron_experts = autoep && in.engine.framework().megatron_moe_options;
  // Megatron's vocab-parallel embedding and lm_head are split over TP; AutoTP keeps them whole.
  const double vocab_split = in.engine.framework().megatron_tp() ? tp : 1.0;
  RankParams r;
  const double shared = autoep && !megatron_experts ? family(ParamFamily::kSharedExperts)
                                                    : family(ParamFamily::kSharedExperts) / tp;
  const double attention_tp = AttentionTpDivisor(in) > 0 ? AttentionTpDivisor(in) : tp;
  r.embedding = (family(ParamFamily::kEmbedding) + family(ParamFamily::kLmHead)) / vocab_split;
  // MLA's down projections and Gated DeltaNet's layers stay whole on every TP rank (param_sharding.cc);
  // the FP8 linears are the memory model's kFp8LinearFamilies (no Gated DeltaNet).
  r.linear = family(ParamFamily::kAttention) / attention_tp + family(ParamFamily::kDenseMlp) / tp + shared +
             family(ParamFamily::kLatentProj);
  r.dense = r.linear + family(ParamFamily::kLinearAttention) + family(ParamFamily::kNorm) +
            family(ParamFamily::kRouter) + r.embedding;
  const double expert_split = megatron_experts ? ep * static_cast<double>(std::max<int64_t>(sizes.etp, 1)) : ep;
  const double routed = autoep ? family(ParamFamily::kRoutedExperts) / expert_split : family(ParamFamily::kRoutedExperts) / tp;
  if (autoep) {
    r.routed = routed;
  } else {
    r.dense += routed;
    // The experts' GEMM weights, split like a dense MLP: FP8 under TransformerEngine, not torchtitan's
    // GroupedExperts (torchao converts nn.Linear only).
    if (in.engine.framework().fp8 != Fp8Linear::kTorchaoFloat8) r.linear += routed;
  }
  if (autoep && tp > 1 && !megatron_experts) {
    r.tp_replicated = family(ParamFamily::kRouter) + family(ParamFamily::kNorm) + family(ParamFamily::kSharedExperts);
  }
  const double threshold = in.zero.param_persistence_threshold;
  const double h = static_cast<double>(m.hidden_size);
  if (h < threshold) r.zero3_persistent += family(ParamFamily::kNorm);
  if (h * static_cast<double>(m.num_experts) < threshold) r.zero3_persistent += family(ParamFamily::kRouter);
  // Biases (GPT-style models) are as small as the norms: persistent too.
  if (m.attention_bias && h * 3.0 < threshold) {
    r.zero3_persistent += static_cast<double>(m.num_hidden_layers) * 4.0 * h / tp;
  }
  // Pipeline stages hold about 1/pp of the layers each.
  r.dense /= pp;
  r.linear /= pp;
  r.routed /= pp;
  r.tp_replicated /= pp;
  r.zero3_persistent /= pp;
  return r;
}

}  // namespace data_parallel

double data_parallel::ParamGatherBytesPerElement(const SimInput& in, double elements, double linear, double bpe) {
  if (!in.engine.fp8 || !in.engine.fp8_param_gather || elements <= 0) return bpe;
  return bpe - (bpe - 1.0) * std::min(1.0, linear / elements);
}

namespace {

using data_parallel::RankParams;

// Megatron-LM's DDP reduces gradient buckets of 25 M bytes while backward runs (its
// overlap_grad_reduce hooks): the last micro-step's backward hides them. With the distributed
// optimizer (ZeRO stage 1 in the config; megatron/core/distributed/param_and_grad_buffer.py
// start_grad_sync: reduce_scatter_tensor per bucket, start_param_sync: all_gather_into_tensor)
// each bucket is reduce-scattered over dp x cp instead, and the updated bf16 parameters are
// all-gathered bucket by bucket in front of the next step's forward (overlap_param_gather).
// Routed experts reduce over their expert-data-parallel group.
void PlanMegatronDdp(const PlanContext& ctx, const RankParams& params, double grad_bytes, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const GroupKind dense_group = ZeroPartitionGroup(*in.plan, false);
  const GroupKind expert_group = ZeroPartitionGroup(*in.plan, true);
  const bool distributed_optimizer = in.zero.stage >= 1;
  const CollectiveKind reduce = distributed_optimizer ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  // The distributed optimizer is Megatron-Core's: its buckets hold max(40 M, 1 M x dp) parameters
  // (core_v0.7.0 distributed_data_parallel_config.py bucket_size: "larger DP sizes need larger
  // buckets to ensure collectives do not become latency-bound"). The 2021 Megatron-LM DDP the
  // published runs trained with reduced 25 MB buckets.
  auto bucket = [&](GroupKind group, double bytes_per_element) {
    if (!distributed_optimizer) return 2.5e7 / bytes_per_element;
    return std::max(4e7, 1e6 * static_cast<double>(GroupSizeOf(*in.plan, group)));
  };
  plan.AddBucketed("dp_grad_reduce", reduce, dense_group, params.dense, grad_bytes, bucket(dense_group, grad_bytes),
                   CommSchedule::kBoundaryOverlap);
  plan.AddBucketed("edp_grad_reduce", reduce, expert_group, params.routed, grad_bytes,
                   bucket(expert_group, grad_bytes), CommSchedule::kBoundaryOverlap);
  if (distributed_optimizer) {
    // With FP8 parameters (--fp8-param-gather) the GEMM weights' buckets are uint8
    // (param_and_grad_buffer.py, modify_underlying_storage) and gather 1 byte per element.
    const double bpe = ctx.bytes_per_element;
    const double dense_bpe = data_parallel::ParamGatherBytesPerElement(in, params.dense, params.linear, bpe);
    const double routed_bpe = data_parallel::ParamGatherBytesPerElement(in, params.routed, params.routed, bpe);
    plan.AddBucketed("dist_opt_param_all_gather", CollectiveKind::kAllGather, dense_group, params.dense, dense_bpe,
                     bucket(dense_group, dense_bpe), CommSchedule::kBoundaryOverlap);
    plan.AddBucketed("dist_opt_expert_param_all_gather", CollectiveKind::kAllGather, expert_group, params.routed,
                     routed_bpe, bucket(expert_group, routed_bpe), CommSchedule::kBoundaryOverlap);
  }
  PlanTiedEmbeddingGradient(ctx, grad_bytes, plan);
}

// How DeepSpeed reduces gradients: all-reduce once per step at ZeRO 0/1 (gradients are not
// partitioned, the engine reduces at the accumulation boundary); reduce-scatter every micro-step
// at ZeRO 2/3. overlap_comm runs the buckets on a side stream during backward (ZeRO >= 1 only;
// ZeRO-0's engine all-reduce starts after backward; the PipelineEngine reduces after the last
// micro-batch).
struct GradientReduction {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CommSchedule schedule = CommSchedule::kStepExposed;
};

GradientReduction DeepSpeedGradientReduction(const SimInput& in) {
  const ZeroSettings& zero = in.zero;
  const bool partitioned = zero.stage >= 2;
  GradientReduction r;
  r.kind = partitioned ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  if (zero.stage == 3 && !zero.stage3_reduce_scatter) r.kind = CollectiveKind::kAllReduce;
  if (partitioned) {
    r.schedule = zero.overlap_comm ? CommSchedule::kBackwardOverlap : CommSchedule::kCritical;
  } else if (zero.stage == 1 && zero.overlap_comm && in.plan->sizes.pp == 1) {
    r.schedule = CommSchedule::kBoundaryOverlap;
  }
  // DeepCompile ZeRO-1/2: reduce_grad all-reduces each gradient bucket on its own NCCL
  // communicator while the backward graph runs (z1.cpp / z2.cpp), ZeRO-1 only in the boundary
  // micro-step's backward.
  if (zero.deepcompile && zero.stage <= 2) {
    r.kind = CollectiveKind::kAllReduce;
    r.schedule = zero.stage == 1 ? CommSchedule::kBoundaryOverlap : CommSchedule::kBackwardOverlap;
  }
  return r;
}

// The dense gradients' reduction, by the ZeRO++ / MiCS / release path DeepSpeed takes.
void PlanDenseGradients(const PlanContext& ctx, const RankParams& params, GradientReduction r, double grad_bytes,
                        CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ZeroSettings& zero = in.zero;
  const ParallelSizes& sizes = in.plan->sizes;
  const GroupKind dense_group = ZeroPartitionGroup(*in.plan, false);
  const bool zero3 = zero.stage == 3;
  const bool mics = zero3 && zero.mics_shard_size > 0;
  const int64_t gpn = std::max(in.cluster->gpus_per_node, 1);
  const bool qgz = zero3 && zero.quantized_gradients && sizes.world > gpn;
  const bool scatter = r.kind == CollectiveKind::kReduceScatter;
  if (qgz && scatter) {
    // qgZ (all_to_all_quant_reduce): each bucket is quantized to int4 (numel / 2 bytes), exchanged
    // inside the node, reduced and requantized to numel / L values, exchanged across nodes with
    // the ranks of the same local index, dequantized and summed. Kernels: ~3 bytes of HBM traffic
    // per gradient.
    const double calls = BucketCalls(params.dense, zero.reduce_bucket_size);
    const double elements = params.dense / calls;
    const double local = static_cast<double>(std::min<int64_t>(gpn, sizes.world));
    plan.AddOnBlocks("qgz_intra_node_all_to_all", CollectiveKind::kAllToAll, dense_group, gpn, false, elements * 0.5,
                     calls, r.schedule, QuantizationKernelSeconds(in, elements));
    plan.AddOnBlocks("qgz_inter_node_all_to_all", CollectiveKind::kAllToAll, dense_group, gpn, true,
                     elements * 0.5 / local, calls, r.schedule);
  } else if (mics && scatter) {
    // MiCS: reduce-scatter inside the shard group every micro-step, then the shard's gradients
    // all-reduced across the replica groups at the accumulation boundary (allreduce_mics_shard_grads).
    const double calls = BucketCalls(params.dense, zero.reduce_bucket_size);
    plan.AddOnBlocks("mics_grad_reduce_scatter", r.kind, dense_group, zero.mics_shard_size, false,
                     params.dense * grad_bytes / calls, calls, r.schedule);
    plan.AddOnBlocks("mics_grad_replica_all_reduce", CollectiveKind::kAllReduce, dense_group, zero.mics_shard_size,
                     true, params.dense / static_cast<double>(zero.mics_shard_size) * grad_bytes / calls, calls,
                     CommSchedule::kBoundaryOverlap);
  } else if (zero3 && Zero3ListCollectives(in) && scatter) {
    // One reduce_scatter per parameter with a list of n inputs (n copies each) in old releases.
    const double calls = data_parallel::Zero3LayerCalls(in, ctx.dense_layers, ctx.moe_layers);
    plan.Add("dp_grad_reduce", r.kind, dense_group, params.dense * grad_bytes / calls, calls, r.schedule,
             StageScope::kAll, 1.0);
  } else {
    plan.AddBucketed("dp_grad_reduce", r.kind, dense_group, params.dense, grad_bytes, zero.reduce_bucket_size,
                     r.schedule);
  }
}

void PlanDeepSpeedZero(const PlanContext& ctx, const RankParams& params, double grad_bytes, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ZeroSettings& zero = in.zero;
  const GradientReduction r = DeepSpeedGradientReduction(in);
  PlanDenseGradients(ctx, params, r, grad_bytes, plan);
  // DeepCompile's ZeRO has one communicator, over the data-parallel group (init_z1_and_2 /
  // init_z3: dc.init): routed experts reduce there too (validate: compile-deepcompile-expert-groups).
  plan.AddBucketed(zero.deepcompile ? "dp_expert_grad_reduce" : "edp_grad_reduce", r.kind,
                   zero.deepcompile ? ZeroPartitionGroup(*in.plan, false) : GroupKind::kEdp, params.routed, grad_bytes,
                   zero.reduce_bucket_size, r.schedule);
  PlanTiedEmbeddingGradient(ctx, grad_bytes, plan);
  data_parallel::PlanZeroParameterGathers(ctx, params, plan);
}

}  // namespace

void PlanDataParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const RankParams params = data_parallel::CountRankParams(in);
  // Folding: TP-replicated gradients are AVERAGEd over TP in an fp32 copy at the boundary
  // (auto_ep_folding.py).
  if (ctx.folding) {
    plan.AddBucketed("fold_tp_grad_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, params.tp_replicated, 4.0,
                     in.zero.reduce_bucket_size, CommSchedule::kStepExposed);
  }
  // The bytes per element are the gradients' (fp32 with an fp32 accumulation buffer:
  // BF16Optimizer, Megatron's bf16 main_grad), or communication_data_type's; under torch_autocast
  // a mix (WireBytesPerElement).
  const double grad_bytes = WireBytesPerElement(in).gradient;
  switch (in.engine.framework().gradients) {
    case GradientSync::kMegatronDdp: return PlanMegatronDdp(ctx, params, grad_bytes, plan);
    case GradientSync::kDeepSpeedZero: return PlanDeepSpeedZero(ctx, params, grad_bytes, plan);
    case GradientSync::kFsdp2: return PlanFsdp2(ctx, grad_bytes, plan);
  }
}

}  // namespace dsp::sim
