// SPDX-License-Identifier: Apache-2.0
// Expert parallelism's collectives: AutoEP's dispatch and combine all-to-alls and its count
// exchange (DeepSpeed 0.19.6 moe/auto_ep_layer.py), and with TP the parallel folding's restore
// all-gathers and TP-replicated gradient average (ep_tp_dispatch.py, auto_ep_folding.py);
// Megatron-Core's token dispatchers (core_v0.12.0 megatron/core/transformer/moe/token_dispatcher.py).
#include "sim/comm/planner.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/comm/deepep_dispatch.h"

namespace dsp::sim {
namespace {

// Megatron-Core's expert generator (parallel_state.py, order tp-cp-ep-dp-pp with cp 1) puts an
// expert-TP group on etp consecutive ranks and the tensor-and-expert group (tp_ep_group) on etp x ep
// consecutive ranks. Tokens enter a MoE layer sequence-parallel: s/tp per rank (the docstring's
// num_local_tokens = S/TP*B; MoELayer.forward refuses TP without sequence parallelism). Every
// collective runs in forward and, mirrored, in backward: an all-gather's backward is a
// reduce-scatter of the same size and the reverse (tensor_parallel/mappings.py), priced alike.
void PlanMegatronExperts(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  const ParallelSizes& sizes = in.plan->sizes;
  const double tp = static_cast<double>(std::max(sizes.tp, 1));
  const int64_t etp = std::max<int64_t>(sizes.etp, 1);
  const int64_t tp_ep = etp * std::max<int64_t>(sizes.ep, 1);
  const double top_k = static_cast<double>(m.num_experts_per_tok);
  const double experts = static_cast<double>(m.num_experts);
  const double bpe = ctx.bytes_per_element;
  const double local_tokens = ctx.tokens / tp;
  const double forward = ctx.moe_layers * ctx.forward_passes;
  const double both = ctx.moe_layers * (ctx.forward_passes + 1.0);
  const CommSchedule critical = CommSchedule::kCritical;
  if (in.engine.moe_dispatcher == MoeDispatcher::kAllGather) {
    // MoEAllGatherTokenDispatcher.token_permutation: the hidden states and the routing probabilities
    // gathered over tp_ep_group (gather_from_sequence_parallel_region), the routing map too (no
    // backward); token_unpermutation reduce-scatters the weighted outputs back.
    const double gathered = local_tokens * static_cast<double>(tp_ep);
    plan.AddOnBlocks("moe_allgather_dispatch", CollectiveKind::kAllGather, GroupKind::kEp, tp_ep, false,
                     gathered * ctx.hidden * bpe, both, critical);
    plan.AddOnBlocks("moe_allgather_probs", CollectiveKind::kAllGather, GroupKind::kEp, tp_ep, false,
                     gathered * experts * bpe, both, critical);
    plan.AddOnBlocks("moe_allgather_routing_map", CollectiveKind::kAllGather, GroupKind::kEp, tp_ep, false,
                     gathered * experts, forward, critical);
    plan.AddOnBlocks("moe_reduce_scatter_combine", CollectiveKind::kReduceScatter, GroupKind::kEp, tp_ep, false,
                     gathered * ctx.hidden * bpe, both, critical);
    return;
  }
  // MoEAlltoAllTokenDispatcher: k rows per local token all-to-all'd over the EP group, then (etp > 1)
  // all-gathered over the expert-TP group; the combine reduce-scatters over it and all-to-alls back.
  const double rows = local_tokens * top_k;
  plan.Add("ep_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, rows * ctx.hidden * bpe, both, critical);
  plan.Add("ep_combine", CollectiveKind::kAllToAll, GroupKind::kEp, rows * ctx.hidden * bpe, both, critical);
  // preprocess: num_local_tokens_per_expert (int64, one per expert) all-gathered over tp_ep_group;
  // the host reads the splits back before the all-to-all (cuda_sync_point "before_ep_alltoall").
  plan.AddOnBlocks("ep_split_counts", CollectiveKind::kAllGather, GroupKind::kEp, tp_ep, false,
                   8.0 * experts * static_cast<double>(tp_ep), forward, critical);
  if (etp > 1) {
    const double gathered = rows * static_cast<double>(etp) * ctx.hidden * bpe;
    plan.AddOnBlocks("etp_dispatch_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, etp, false, gathered,
                     both, critical);
    plan.AddOnBlocks("etp_combine_reduce_scatter", CollectiveKind::kReduceScatter, GroupKind::kTp, etp, false,
                     gathered, both, critical);
  }
}

// NeMo AutoModel's DeepEP experts (--te-modules: GroupedExpertsDeepEP, fused_a2a.py): one row per
// destination rank (per remote node over RDMA) instead of one per routed assignment, forward and
// mirrored in backward (the dispatch's backward is a combine and the reverse); DeepEP's notify step
// exchanges the counts first.
void PlanDeepEp(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  const Cluster& cluster = *in.cluster;
  const auto groups = in.plan->groups.groups.find(GroupKind::kEp);
  if (groups == in.plan->groups.groups.end() || groups->second.empty()) return;
  const MoeRouting routing = in.engine.fake_balanced_gate ? MoeRouting::kFakeBalanced : MoeRouting::kUniform;
  const double row_bytes = ctx.hidden * ctx.bytes_per_element;
  const int gpn = std::max(cluster.gpus_per_node, 1);
  // Every EP group dispatches at once, so the slowest sets the pace; groups laid over nodes alike
  // (the same node of each member, relative to the first) price alike, so each shape is priced once.
  std::map<std::vector<int>, std::pair<double, double>> by_shape;  // shape -> (seconds, bytes) a call
  double seconds = 0, bytes = 0;
  for (const RankGroup& group : groups->second) {
    if (group.empty()) continue;
    std::vector<int> shape;
    shape.reserve(group.size());
    for (int rank : group) shape.push_back(rank / gpn - group.front() / gpn);
    auto [it, fresh] = by_shape.try_emplace(std::move(shape));
    if (fresh) {
      const DispatchFanout fanout =
          DeepEpFanout(m.num_experts, m.num_experts_per_tok, group, cluster.gpus_per_node, routing, m.n_group,
                       m.topk_group);
      const GroupLinkInfo link = DescribeGroup(cluster, group, CollectiveKind::kAllToAll);
      it->second = {DeepEpCallSeconds(fanout, ctx.tokens, row_bytes, link, cluster.intra_node, cluster.inter_node),
                    ctx.tokens * fanout.ranks * row_bytes};
    }
    if (it->second.first > seconds) std::tie(seconds, bytes) = it->second;
  }
  const double calls = ctx.moe_layers * (ctx.forward_passes + 1.0);
  const CommSchedule critical = CommSchedule::kCritical;
  plan.AddPriced("ep_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, bytes, calls, seconds, critical);
  plan.AddPriced("ep_combine", CollectiveKind::kAllToAll, GroupKind::kEp, bytes, calls, seconds, critical);
  plan.Add("ep_split_counts", CollectiveKind::kAllToAll, GroupKind::kEp, 4.0 * m.num_experts,
           ctx.moe_layers * ctx.forward_passes, critical);
}

}  // namespace

void PlanExpertParallel(const PlanContext& ctx, CollectivePlanner& plan) {
  const SimInput& in = ctx.in;
  const ModelSpec& m = *in.model;
  if (!ctx.autoep || !m.is_moe()) return;
  if (in.engine.framework().megatron_moe_options) return PlanMegatronExperts(ctx, plan);
  if (in.engine.te_modules) return PlanDeepEp(ctx, plan);
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
