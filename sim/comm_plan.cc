// Which collectives a DeepSpeed plan issues per step, how big they are, on which group, and when.
// Volumes: performance-model.md §2.4; insertion points and reduction groups: deepspeed-config.md
// §3 (AutoTP pass, AutoSP all-to-alls) and §4 (folding and ordinary gradient reduction).
#include "sim/comm_plan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/model/model_spec.h"
#include "sim/group_links.h"

namespace dsp::sim {
namespace {

bool PerMicroStep(CommSchedule s) {
  return s == CommSchedule::kCritical || s == CommSchedule::kForwardOverlap ||
         s == CommSchedule::kBackwardOverlap;
}

class Planner {
 public:
  explicit Planner(const SimInput& in) : in_(in) {}

  // `calls` calls of S = `bytes` each, per micro-step or per step depending on `schedule`.
  void Add(std::string purpose, CollectiveKind kind, GroupKind group, double bytes, double calls,
           CommSchedule schedule) {
    if (bytes <= 0 || calls <= 0) return;
    const GroupLinkInfo& g = Describe(group, kind);
    if (!g.present || g.size <= 1) return;
    const double one_call = CollectiveSeconds(kind, g.size, bytes, g.link);
    const double units = PerMicroStep(schedule)
                             ? static_cast<double>(std::max<int64_t>(in_.workload.grad_accum, 1))
                             : 1.0;
    PlannedCollective p;
    p.call.purpose = std::move(purpose);
    p.call.kind = kind;
    p.call.group = group;
    p.call.group_size = g.size;
    p.call.bytes_per_call = bytes;
    p.call.calls_per_step = calls * units;
    p.call.inter_node = g.inter_node;
    p.call.seconds = one_call * calls * units;
    p.schedule = schedule;
    p.calls_per_unit = calls;
    p.seconds_per_unit = one_call * calls;
    p.floor_seconds = one_call;  // the first prefetch or the last bucket cannot be hidden
    out_.push_back(std::move(p));
  }

  // A buffer of `elements` sent in buckets of `bucket_elements` (DeepSpeed's reduce/allgather
  // bucket sizes): ceil(elements / bucket) calls of equal size.
  void AddBucketed(std::string purpose, CollectiveKind kind, GroupKind group, double elements,
                   double bytes_per_element, double bucket_elements, CommSchedule schedule) {
    if (elements <= 0) return;
    const double calls = bucket_elements > 0 ? std::ceil(elements / bucket_elements) : 1.0;
    Add(std::move(purpose), kind, group, elements * bytes_per_element / calls, calls, schedule);
  }

  std::vector<PlannedCollective> Take() { return std::move(out_); }

 private:
  // Every group of a kind is scanned once per (kind, collective): per evaluation, or once per plan
  // when the caller shares a cache across evaluations (tune).
  const GroupLinkInfo& Describe(GroupKind group, CollectiveKind kind) {
    GroupLinkCache& cache = in_.link_cache != nullptr ? *in_.link_cache : local_cache_;
    return cache.Get(in_, group, kind);
  }
  GroupLinkCache local_cache_;

  const SimInput& in_;
  std::vector<PlannedCollective> out_;
};

// Parameters (elements) one rank holds before ZeRO partitions them, per reduction group.
struct RankParams {
  double dense = 0;          // reduced over dp (or sp_dp): everything but AutoEP's routed experts
  double routed = 0;         // AutoEP routed experts, reduced over edp
  double tp_replicated = 0;  // replicated across TP under folding: router, norms, shared experts
  double zero3_persistent = 0;  // tensors below stage3_param_persistence_threshold: never gathered
};

RankParams CountRankParams(const SimInput& in) {
  const ModelSpec& m = *in.model;
  const ParamCounts c = CountParameters(m);
  auto family = [&](ParamFamily f) { return static_cast<double>(c.by_family.at(f)); };
  const double tp = in.plan->sizes.tp, ep = in.plan->sizes.ep, pp = in.plan->sizes.pp;
  const bool autoep = in.plan->sizes.expert_parallel;
  RankParams r;
  // AutoTP splits attention and dense MLPs; embedding, lm_head (param_sharding.cc), norms and
  // routers stay whole.
  const double shared =
      autoep ? family(ParamFamily::kSharedExperts) : family(ParamFamily::kSharedExperts) / tp;
  const double tp_split = family(ParamFamily::kAttention) + family(ParamFamily::kDenseMlp);
  r.dense = tp_split / tp + shared + family(ParamFamily::kNorm) + family(ParamFamily::kRouter) +
            family(ParamFamily::kEmbedding) + family(ParamFamily::kLmHead);
  const double routed =
      autoep ? family(ParamFamily::kRoutedExperts) / ep : family(ParamFamily::kRoutedExperts) / tp;
  if (autoep) {
    r.routed = routed;
  } else {
    r.dense += routed;
  }
  if (autoep && tp > 1) {
    r.tp_replicated = family(ParamFamily::kRouter) + family(ParamFamily::kNorm) +
                      family(ParamFamily::kSharedExperts);
  }
  const double threshold = in.zero.param_persistence_threshold;
  const double h = static_cast<double>(m.hidden_size);
  if (h < threshold) r.zero3_persistent += family(ParamFamily::kNorm);
  if (h * static_cast<double>(m.num_experts) < threshold) {
    r.zero3_persistent += family(ParamFamily::kRouter);
  }
  // Pipeline stages hold about 1/pp of the layers each.
  r.dense /= pp;
  r.routed /= pp;
  r.tp_replicated /= pp;
  r.zero3_persistent /= pp;
  return r;
}

}  // namespace

std::vector<PlannedCollective> PlanCollectives(const SimInput& in, const StepTimeOptions& options) {
  if (in.plan == nullptr || in.model == nullptr || in.cluster == nullptr) return {};
  const ModelSpec& m = *in.model;
  const ParallelSizes& sizes = in.plan->sizes;
  const double bpe = in.workload.bytes_per_param;
  const double tokens =
      static_cast<double>(in.workload.micro_batch * in.workload.seq_len) / sizes.sp;
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(m.head_dim);
  const double top_k = static_cast<double>(m.num_experts_per_tok);
  const double pp = sizes.pp;
  const double layers = static_cast<double>(m.num_hidden_layers) / pp;
  const double moe_layers = static_cast<double>(m.NumMoeLayers()) / pp;
  const double dense_layers = layers - moe_layers;
  const bool autoep = sizes.expert_parallel;
  const bool folding = autoep && sizes.tp > 1;
  // Full recompute re-runs each layer's forward, collectives included, inside backward.
  const double fwd_passes = in.workload.recompute == Recompute::kFull ? 2.0 : 1.0;
  const CommSchedule critical = CommSchedule::kCritical;
  Planner plan(in);

  // AutoTP: Megatron f/g pairs. Attention always; a dense MLP (or, without AutoEP, the MoE block
  // whose experts AutoTP splits like an MLP) adds a second pair. One all-reduce forward (row
  // output), one backward (column input gradient); folded MoE blocks have none.
  const double tp_pairs = layers + dense_layers + (autoep ? 0.0 : moe_layers);
  const double tp_calls = tp_pairs * (fwd_passes + 1.0);
  if (options.tp_sequence_parallel) {
    plan.Add("tp_sp_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, tokens * h * bpe,
             tp_calls, critical);
    plan.Add("tp_sp_reduce_scatter", CollectiveKind::kReduceScatter, GroupKind::kTp,
             tokens * h * bpe, tp_calls, critical);
  } else {
    plan.Add("tp_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp, tokens * h * bpe,
             tp_calls, critical);
  }
  // lm_head stays whole under AutoTP training (no LmHeadLinearAllreduce, param_sharding.cc): no
  // logits all-reduce.

  // Ulysses/AutoSP: all-to-alls after q, k, v and on the attention output, mirrored in backward.
  // A rank's send buffer is its s/sp tokens of every head; K/V heads are repeated up to sp.
  const double ulysses_calls = 2.0 * layers * (fwd_passes + 1.0);
  const double q_width = static_cast<double>(m.num_attention_heads) * d;
  const double kv_width =
      std::max<double>(static_cast<double>(m.num_key_value_heads), sizes.sp) * d;
  plan.Add("ulysses_all_to_all", CollectiveKind::kAllToAll, GroupKind::kSp, tokens * q_width * bpe,
           ulysses_calls, critical);
  plan.Add("ulysses_all_to_all", CollectiveKind::kAllToAll, GroupKind::kSp, tokens * kv_width * bpe,
           ulysses_calls, critical);

  if (autoep && m.is_moe()) {
    // Dispatch and combine carry k x tokens rows of h (split over the TP peers when folded),
    // forward and again in backward.
    const double fold = folding ? sizes.tp : 1.0;
    const double a2a_bytes = tokens * top_k / fold * h * bpe;
    const double a2a_calls = moe_layers * (fwd_passes + 1.0);
    plan.Add("ep_dispatch", CollectiveKind::kAllToAll, GroupKind::kEp, a2a_bytes, a2a_calls,
             critical);
    plan.Add("ep_combine", CollectiveKind::kAllToAll, GroupKind::kEp, a2a_bytes, a2a_calls,
             critical);
    if (folding) {
      // restore_combined all-gathers the k x tokens expert rows over TP; its backward all-reduces.
      const double rows_bytes = tokens * top_k * h * bpe;
      plan.Add("fold_restore_all_gather", CollectiveKind::kAllGather, GroupKind::kTp, rows_bytes,
               moe_layers * fwd_passes, critical);
      plan.Add("fold_restore_backward_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp,
               rows_bytes, moe_layers, critical);
    }
  }

  const RankParams params = CountRankParams(in);
  const ZeroSettings& zero = in.zero;
  // Folding: TP-replicated gradients are AVERAGEd over TP in an fp32 copy at the boundary (§4.1).
  if (folding) {
    plan.AddBucketed("fold_tp_grad_all_reduce", CollectiveKind::kAllReduce, GroupKind::kTp,
                     params.tp_replicated, 4.0, zero.reduce_bucket_size,
                     CommSchedule::kStepExposed);
  }

  // Gradient reduction: all-reduce once per step at ZeRO 0/1 (gradients are not partitioned, the
  // engine reduces at the accumulation boundary); reduce-scatter every micro-step at ZeRO 2/3.
  // overlap_comm runs the buckets on a side stream during backward (ZeRO >= 1 only; ZeRO-0's
  // engine all-reduce starts after backward).
  const GroupKind dense_group = ZeroPartitionGroup(*in.plan, false);
  const bool partitioned_grads = zero.stage >= 2;
  const CollectiveKind grad_kind =
      partitioned_grads ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  CommSchedule grad_schedule = CommSchedule::kStepExposed;
  if (partitioned_grads) {
    grad_schedule = zero.overlap_comm ? CommSchedule::kBackwardOverlap : critical;
  } else if (zero.stage == 1 && zero.overlap_comm) {
    grad_schedule = CommSchedule::kBoundaryOverlap;
  }
  plan.AddBucketed("dp_grad_reduce", grad_kind, dense_group, params.dense, bpe,
                   zero.reduce_bucket_size, grad_schedule);
  plan.AddBucketed("edp_grad_reduce", grad_kind, GroupKind::kEdp, params.routed, bpe,
                   zero.reduce_bucket_size, grad_schedule);

  if (zero.stage == 1 || zero.stage == 2) {
    // Each rank steps its partition, then the updated bf16 parameters are all-gathered.
    plan.AddBucketed("zero_param_all_gather", CollectiveKind::kAllGather, dense_group, params.dense,
                     bpe, zero.allgather_bucket_size, CommSchedule::kStepExposed);
    plan.AddBucketed("zero_param_all_gather", CollectiveKind::kAllGather, GroupKind::kEdp,
                     params.routed, bpe, zero.allgather_bucket_size, CommSchedule::kStepExposed);
  } else if (zero.stage == 3) {
    // Parameters are gathered module by module (about one call per layer, plus embedding and
    // head) before forward and again before backward; prefetching hides them behind compute.
    const bool prefetch = zero.prefetch_bucket_size > 0;
    const CommSchedule fwd = prefetch ? CommSchedule::kForwardOverlap : critical;
    const CommSchedule bwd = prefetch ? CommSchedule::kBackwardOverlap : critical;
    const double gathered = params.dense - params.zero3_persistent;
    const double dense_calls = layers + 1.0;
    for (auto [purpose, schedule] :
         {std::pair{"zero3_all_gather_fwd", fwd}, std::pair{"zero3_all_gather_bwd", bwd}}) {
      plan.Add(purpose, CollectiveKind::kAllGather, dense_group, gathered * bpe / dense_calls,
               dense_calls, schedule);
      if (moe_layers > 0) {
        plan.Add(purpose, CollectiveKind::kAllGather, GroupKind::kEdp,
                 params.routed * bpe / moe_layers, moe_layers, schedule);
      }
    }
  }
  return plan.Take();
}

}  // namespace dsp::sim
