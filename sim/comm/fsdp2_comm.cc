// SPDX-License-Identifier: Apache-2.0
// PyTorch FSDP2's collectives as torchtitan drives them (torchtitan v0.2.2
// torchtitan/models/llama3/infra/parallelize.py apply_fsdp; PyTorch 2.9
// torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py and _fsdp_collectives.py).
//
// fully_shard makes one parameter group of each transformer block, one of tok_embeddings and one
// of [norm, output] (the root). Before a group's forward it all-gathers the group's shards in the
// mixed-precision policy's param_dtype (bf16), prefetching the next group's gather behind the
// current forward; with reshard_after_forward it frees the unsharded parameters after forward and
// gathers them again before backward (torchtitan's "default" policy: reshard unless pipeline
// parallel; the root group is never resharded after forward). After a group's backward its
// gradients are reduce-scattered in reduce_dtype (fp32: training.mixed_precision_reduce). Under
// torch.distributed.pipelining the stage turns gradient sync off for all but the last micro-batch
// (pipelining/stage.py backward_maybe_with_nosync), so the reduce-scatter runs once per step, and
// without resharding the forward gathers run once per step too: once per call of the schedule,
// where the loop calls it per local batch (--pp-schedule-micro-batches: the call's last backward
// runs post_backward, which reduce-scatters and reshards, so the next call gathers again). NeMo
// AutoModel's MoE parallelizer (--automodel-experts; components/moe/parallelizer.py apply_fsdp at
// NVIDIA-NeMo/Automodel 89e3a9fd, the commit of its published benchmarks) shards model.model, not
// the pipeline stage's module, so the stage runs a plain backward (stage.py: "Non-DP submodule")
// and FSDP's own hooks reduce-scatter and reshard after every micro-batch, and every micro-batch's
// forward gathers again. (Its later MoEFSDPSyncMixin patch, which defers both to the optimizer
// step, needs BackendConfig.enable_fsdp_optimizations, which its benchmark configs never set.)
// Without sharding (ZeRO stage 0:
// torchtitan's dp_replicate, replicate()) gradients are all-reduced in DDP's 25 MB buckets,
// overlapped with backward.
#include "sim/comm/data_parallel_internal.h"
#include "sim/cost/param_sharding.h"

namespace dsp::sim {
namespace data_parallel {

Fsdp2Groups DescribeFsdp2Groups(const SimInput& in, const RankParams& params) {
  Fsdp2Groups g;
  const double pp = std::max(in.plan->sizes.pp, 1);
  g.layers = static_cast<double>(in.model->num_hidden_layers) / pp;
  // tok_embeddings on the first stage, [norm, output] on the last: two groups on one stage,
  // one per stage on average with a pipeline.
  g.outside = pp > 1 ? 1.0 : 2.0;
  g.reshard_after_forward = in.zero.stage >= 3 && in.plan->sizes.pp <= 1;
  g.sync_every_micro_batch = in.plan->sizes.pp <= 1 || in.engine.automodel_experts;
  g.dense = params.dense;
  g.routed = params.routed;
  g.linear = params.linear;
  // The root group ([norm, output]) stays unsharded after forward: its share of the gathered
  // elements is not gathered again in backward.
  g.root = pp > 1 ? 0.0 : params.embedding / 2.0;
  return g;
}

}  // namespace data_parallel

void PlanFsdp2(const PlanContext& ctx, double grad_bytes, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const data_parallel::RankParams params = data_parallel::CountRankParams(in);
  const data_parallel::Fsdp2Groups g = data_parallel::DescribeFsdp2Groups(in, params);
  const GroupKind dense_group = ZeroPartitionGroup(*in.plan, false);
  const GroupKind expert_group = ZeroPartitionGroup(*in.plan, true);
  // The once-per-step collectives run once per call of the pipeline schedule (see above).
  const double calls =
      g.sync_every_micro_batch ? 1.0 : static_cast<double>(in.engine.pipeline_schedule_calls(in.workload.grad_accum));
  auto per_call = [&](std::string_view purpose, CommSchedule schedule) {
    if (schedule == CommSchedule::kBoundaryOverlap) plan.SetRepeats(purpose, calls);
  };
  if (in.zero.stage == 0) {
    // replicate(): DDP's bucketed all-reduce (torch/nn/parallel/distributed.py bucket_cap_mb 25)
    // overlapped with every micro-batch's backward; under a pipeline the stage runs no_sync until
    // the last micro-batch (pipelining/stage.py backward_maybe_with_nosync). Experts reduce over
    // their expert-data-parallel ranks.
    const CommSchedule ddp = g.sync_every_micro_batch ? CommSchedule::kBackwardOverlap : CommSchedule::kBoundaryOverlap;
    plan.AddBucketed("ddp_grad_all_reduce", CollectiveKind::kAllReduce, dense_group, params.dense, grad_bytes,
                     2.5e7 / grad_bytes, ddp);
    per_call("ddp_grad_all_reduce", ddp);
    plan.AddBucketed("ddp_expert_grad_all_reduce", CollectiveKind::kAllReduce, expert_group, params.routed,
                     grad_bytes, 2.5e7 / grad_bytes, ddp);
    per_call("ddp_expert_grad_all_reduce", ddp);
    return;
  }
  // MixedPrecisionPolicy.param_dtype (bf16), or torchao's float8 all-gather of the linear weights
  // (--fp8-param-gather: fsdp_utils.py WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather).
  const double param_bytes = data_parallel::ParamGatherBytesPerElement(in, g.dense, g.linear, ctx.bytes_per_element);
  // torchtitan's GroupedExperts hold 3-D parameters, not nn.Linear: Float8LinearConverter leaves
  // them bf16, and so does their all-gather. NeMo AutoModel's (--automodel-experts) are wrapped
  // without a MixedPrecisionPolicy: gathered and reduced in the parameters' own dtype.
  const double expert_dtype = in.engine.bf16_params ? 2.0 : 4.0;
  const double expert_param_bytes = in.engine.automodel_experts ? expert_dtype : ctx.bytes_per_element;
  const double expert_grad_bytes = in.engine.automodel_experts ? expert_dtype : grad_bytes;
  const double groups = g.layers + g.outside;
  const double moe_groups = ctx.moe_layers;
  // Forward: every group gathered before its forward; once per step when nothing reshards and
  // the pipeline keeps the unsharded parameters from the first micro-batch on.
  const CommSchedule forward = g.reshard_after_forward || g.sync_every_micro_batch ? CommSchedule::kForwardOverlap
                                                                                    : CommSchedule::kBoundaryOverlap;
  plan.Add("fsdp_all_gather_fwd", CollectiveKind::kAllGather, dense_group, param_bytes * g.dense / groups, groups,
           forward);
  per_call("fsdp_all_gather_fwd", forward);
  if (moe_groups > 0) {
    plan.Add("fsdp_expert_all_gather_fwd", CollectiveKind::kAllGather, expert_group,
             expert_param_bytes * g.routed / moe_groups, moe_groups, forward);
    per_call("fsdp_expert_all_gather_fwd", forward);
  }
  if (g.reshard_after_forward) {
    // Backward gathers every group again but the root; a recomputed forward (activation
    // checkpointing) runs inside backward on the parameters this gather brings.
    const double regathered = g.dense - g.root;
    plan.Add("fsdp_all_gather_bwd", CollectiveKind::kAllGather, dense_group,
             param_bytes * regathered / (groups - 1.0), groups - 1.0, CommSchedule::kBackwardOverlap);
    if (moe_groups > 0) {
      plan.Add("fsdp_expert_all_gather_bwd", CollectiveKind::kAllGather, expert_group,
               expert_param_bytes * g.routed / moe_groups, moe_groups, CommSchedule::kBackwardOverlap);
    }
  }
  if (in.engine.fp8 && in.engine.fp8_param_gather) {
    // The float8 casts need each weight's amax over its shards: torchtitan's recipe pairs the fp8
    // all-gather with precompute_float8_dynamic_scale_for_fsdp after the optimizer step, one
    // all-reduce of every weight's amax (torchao float8/fsdp_utils.py). Assumed on.
    plan.Add("fsdp_float8_amax_all_reduce", CollectiveKind::kAllReduce, dense_group, 4.0 * 7.0 * g.layers, 1.0,
             CommSchedule::kStepExposed);
  }
  // Reduce-scatter after each group's backward (foreach_reduce), in reduce_dtype.
  const CommSchedule reduce =
      g.sync_every_micro_batch ? CommSchedule::kBackwardOverlap : CommSchedule::kBoundaryOverlap;
  plan.Add("fsdp_reduce_scatter", CollectiveKind::kReduceScatter, dense_group, grad_bytes * g.dense / groups, groups,
           reduce);
  per_call("fsdp_reduce_scatter", reduce);
  if (moe_groups > 0) {
    plan.Add("fsdp_expert_reduce_scatter", CollectiveKind::kReduceScatter, expert_group,
             expert_grad_bytes * g.routed / moe_groups, moe_groups, reduce);
    per_call("fsdp_expert_reduce_scatter", reduce);
  }
}

}  // namespace dsp::sim
