// SPDX-License-Identifier: Apache-2.0
// Expert parallelism's collectives: AutoEP's dispatch and combine all-to-alls and its count
// exchange (DeepSpeed 0.19.6 moe/auto_ep_layer.py), and with TP the parallel folding's restore
// all-gathers and TP-replicated gradient average (ep_tp_dispatch.py, auto_ep_folding.py).
#include "sim/comm/planner.h"

namespace dsp::sim {

void PlanExpertParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  if (!ctx.autoep || !m.is_moe()) return;
  const ParallelSizes& sizes = in.plan->sizes;
  const double top_k = static_cast<double>(m.num_experts_per_tok);
  const double bpe = ctx.bytes_per_element;
  const double passes = ctx.forward_passes;
  const CommSchedule critical = CommSchedule::kCritical;
  // Dispatch and combine carry k x tokens rows of h (split over the TP peers when folded),
  // forward and again in backward.
  const double fold = ctx.folding ? sizes.tp : 1.0;
  const double a2a_bytes = ctx.tokens * top_k / fold * ctx.hidden * bpe;
  const double a2a_calls = ctx.moe_layers * (passes + 1.0);
  plan.Add("ep_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, a2a_bytes, a2a_calls, critical);
  plan.Add("ep_combine", CollectiveKind::kAllToAll, GroupKind::kEp, a2a_bytes, a2a_calls, critical);
  // Before the dispatch, one all_to_all_single exchanges the [ep, E/ep] int32 count matrix and
  // the host reads it back (_split_plan_from_expert_counts): latency, not bandwidth, and nothing
  // in backward.
  plan.Add("ep_split_counts", CollectiveKind::kAllToAll, GroupKind::kEp, 4.0 * m.num_experts,
           ctx.moe_layers * passes, critical);
  if (!ctx.folding) return;
  // restore_combined all-gathers the k x tokens expert rows over TP; its backward all-reduces.
  const double rows_bytes = ctx.tokens * top_k * ctx.hidden * bpe;
  plan.Add("fold_restore_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, rows_bytes,
           ctx.moe_layers * passes, critical);
  plan.Add("fold_restore_backward_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, rows_bytes,
           ctx.moe_layers, critical);
  // ... and with each of its four _all_gather_variable_rows calls (outputs, token indices,
  // capacity slots, weights) a row-count all_gather first; the three small ones carry one int64,
  // int64 or fp32 per assignment: seven latency-bound all-gathers per layer and forward beside the
  // rows.
  plan.Add("fold_restore_count_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, 8.0 * sizes.tp,
           4.0 * ctx.moe_layers * passes, critical);
  plan.Add("fold_restore_index_all_gather", CollectiveKind::kAllGather, GroupKind::kTp,
           ctx.tokens * top_k * (8.0 + 8.0 + 4.0) / 3.0, 3.0 * ctx.moe_layers * passes, critical);
}

}  // namespace dsp::sim
