// SPDX-License-Identifier: Apache-2.0
#include "sim/comm/planner.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dsp::sim {
namespace {

bool PerMicroStep(CommSchedule s) {
  return s == CommSchedule::kCritical || s == CommSchedule::kForwardOverlap ||
         s == CommSchedule::kBackwardOverlap;
}

}  // namespace

double BucketCalls(double elements, double bucket_elements) {
  return bucket_elements > 0 ? std::ceil(elements / bucket_elements) : 1.0;
}

void CollectivePlanner::Add(std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes,
                            double calls, CommSchedule schedule, StageScope scope, double per_call_extra_kernels,
                            double extra_seconds) {
  if (bytes <= 0 || calls <= 0) return;
  const GroupLinkInfo& g = Cache().Get(in_, group, kind);
  const double extra = per_call_extra_kernels * g.size * in_.cluster->gpu.kernel_overhead_seconds + extra_seconds;
  AddOn(g, purpose, kind, group, bytes, calls, schedule, scope, extra);
}

void CollectivePlanner::AddOnBlocks(std::string_view purpose, CollectiveKind kind, GroupKind group, int64_t block,
                                    bool strided, double bytes, double calls, CommSchedule schedule,
                                    double extra_seconds) {
  if (bytes <= 0 || calls <= 0) return;
  const size_t before = out_.size();
  AddOn(Cache().GetBlocks(in_, kind, block, strided), purpose, kind, group, bytes, calls, schedule,
        StageScope::kAll, extra_seconds);
  if (out_.size() > before) {
    out_.back().block = block;
    out_.back().strided = strided;
  }
}

void CollectivePlanner::AddBucketed(std::string_view purpose, CollectiveKind kind, GroupKind group,
                                    double elements, double bytes_per_element, double bucket_elements,
                                    CommSchedule schedule, StageScope scope) {
  if (elements <= 0) return;
  const double calls = BucketCalls(elements, bucket_elements);
  Add(purpose, kind, group, elements * bytes_per_element / calls, calls, schedule, scope);
}

void CollectivePlanner::DropFloor() {
  if (!out_.empty()) out_.back().floor_seconds = 0;
}

void CollectivePlanner::SetRepeats(std::string_view purpose, double repeats) {
  if (out_.empty() || repeats <= 1 || out_.back().call.purpose != purpose) return;
  PlannedCollective& p = out_.back();
  p.repeats = repeats;
  p.call.calls_per_step *= repeats;
  p.call.seconds *= repeats;
}

void CollectivePlanner::SetFloorShare(double share) {
  if (!out_.empty()) out_.back().floor_seconds = share * out_.back().seconds_per_unit;
}

void CollectivePlanner::AddOn(const GroupLinkInfo& g, std::string_view purpose, CollectiveKind kind,
                              GroupKind group, double bytes, double calls, CommSchedule schedule,
                              StageScope scope, double extra) {
  if (!g.present || g.size <= 1) return;
  const double one_call = CollectiveSeconds(kind, g.size, bytes, g.link);
  Push(g, purpose, kind, group, bytes, calls, schedule, scope, one_call + extra,
       std::max(0.0, one_call - g.link.latency_seconds));
}

void CollectivePlanner::AddPriced(std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes,
                                  double calls, double seconds_per_call, CommSchedule schedule) {
  if (bytes <= 0 || calls <= 0) return;
  const GroupLinkInfo& g = Cache().Get(in_, group, kind);
  if (!g.present || g.size <= 1) return;
  Push(g, purpose, kind, group, bytes, calls, schedule, StageScope::kAll, seconds_per_call,
       std::max(0.0, seconds_per_call - g.link.latency_seconds));
}

void CollectivePlanner::Push(const GroupLinkInfo& g, std::string_view purpose, CollectiveKind kind,
                             GroupKind group, double bytes, double calls, CommSchedule schedule, StageScope scope,
                             double one_call, double one_call_on_link) {
  const double units =
      PerMicroStep(schedule) ? static_cast<double>(std::max<int64_t>(in_.workload.grad_accum, 1)) : 1.0;
  PlannedCollective p;
  p.call.purpose = purpose;
  p.call.kind = kind;
  p.call.group = group;
  p.call.group_size = g.size;
  p.call.bytes_per_call = bytes;
  p.call.calls_per_step = calls * units;
  p.call.inter_node = g.inter_node;
  p.call.seconds = one_call * calls * units;
  p.schedule = schedule;
  p.scope = scope;
  p.calls_per_unit = calls;
  p.seconds_per_unit = one_call * calls;
  p.link_seconds_per_unit = one_call_on_link * calls;
  p.floor_seconds = one_call;  // the first prefetch or the last bucket cannot be hidden
  out_.push_back(std::move(p));
}

PlanContext MakePlanContext(const SimInput& in, const StepTimeOptions& options) {
  const ModelSpec& m = *in.model;
  PlanContext ctx{in, options};
  ctx.bytes_per_element = in.workload.bytes_per_param;
  ctx.tokens = static_cast<double>(in.workload.micro_batch * in.workload.seq_len) / SequenceShards(in);
  ctx.hidden = static_cast<double>(m.hidden_size);
  const double pp = in.plan->sizes.pp;
  ctx.layers = static_cast<double>(m.num_hidden_layers) / pp;
  ctx.moe_layers = static_cast<double>(m.NumMoeLayers()) / pp;
  ctx.dense_layers = ctx.layers - ctx.moe_layers;
  // Full recompute re-runs each layer's forward, collectives included, inside backward.
  ctx.forward_passes = in.workload.recompute == Recompute::kFull ? 2.0 : 1.0;
  ctx.tp_sequence_parallel = options.tp_sequence_parallel || in.engine.megatron_sp;
  ctx.autoep = in.plan->sizes.expert_parallel;
  // Parallel folding's restore and TP-replicated gradients are AutoEP's (auto_ep_folding.py).
  ctx.folding = ctx.autoep && in.plan->sizes.tp > 1 && in.engine.framework().autoep;
  return ctx;
}

}  // namespace dsp::sim
