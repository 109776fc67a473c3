// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism's collectives: activations forward and gradients backward between
// neighbouring stages, once per micro-batch and model chunk, and the tied embedding's gradient
// between the first and last stage. What a stage sends is its framework's (PipelineRuntime).
#include <algorithm>

#include "sim/comm/planner.h"
#include "sim/frameworks/framework.h"

namespace dsp::sim {

void PlanPipelineParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ParallelSizes& sizes = in.plan->sizes;
  if (sizes.pp <= 1) return;
  // Megatron's schedules send once per model chunk (virtual stage) and, without sequence
  // parallelism, 1/tp of the tensor that the receiver all-gathers inside the TP group
  // (scatter_gather_tensors_in_pipeline); DeepSpeed's PipelineEngine sends it whole from every
  // TP rank.
  const bool megatron_schedules = in.engine.framework().pipeline == PipelineRuntime::kMegatronSchedules;
  const double chunks = megatron_schedules ? in.engine.virtual_stages : 1.0;
  const double split = megatron_schedules && !ctx.tp_sequence_parallel ? static_cast<double>(sizes.tp) : 1.0;
  const double act =
      ctx.tokens * ctx.hidden * ctx.bytes_per_element / (ctx.tp_sequence_parallel ? sizes.tp : 1.0);
  plan.Add("pp_send_recv", CollectiveKind::kSendRecv, GroupKind::kPp, act / split, 2.0 * chunks,
           CommSchedule::kCritical);
  if (split > 1) {
    plan.Add("pp_tp_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, act, 2.0 * chunks,
             CommSchedule::kCritical);
  }
}

void PlanTiedEmbeddingGradient(const PlanContext& ctx, double grad_bytes, CollectivePlanner& plan) {
  // Megatron-DeepSpeed's TiedLayerSpec (PipelineEngine _exec_reduce_tied_grads) and Megatron-LM's
  // _allreduce_word_embedding_grads: after the pipeline drains.
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  const ParallelSizes& sizes = in.plan->sizes;
  if (sizes.pp <= 1 || !m.tie_word_embeddings || !in.engine.framework().tied_embedding_grad_all_reduce) return;
  plan.Add("pp_embedding_grad_all_reduce", CollectiveKind::kAllReduce, GroupKind::kPp,
           static_cast<double>(m.vocab_size) * ctx.hidden / sizes.tp * grad_bytes, 1, CommSchedule::kStepExposed,
           StageScope::kFirst);
}

}  // namespace dsp::sim
