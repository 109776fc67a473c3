// SPDX-License-Identifier: Apache-2.0
// The pieces the per-parallelism collective planners share: CollectivePlanner, which costs each
// collective on its real groups and appends it to the step's list, and PlanContext, the sizes every
// planner reads (tokens per rank, hidden size, layers per stage, recompute passes). PlanCollectives
// (comm_plan.cc) composes the planners declared here, one per parallelism dimension, the way
// torchtitan composes apply_tp, apply_cp and apply_fsdp.
#pragma once

#include <string_view>
#include <vector>

#include "sim/comm/comm_plan.h"
#include "sim/comm/group_links.h"

namespace dsp::sim {

/// Calls that send `elements` in buckets of `bucket_elements` (DeepSpeed's reduce/allgather bucket
/// sizes; 0 = one call).
double BucketCalls(double elements, double bucket_elements);

class CollectivePlanner {
 public:
  explicit CollectivePlanner(const SimInput& in) : in_(in) {}

  /// `calls` calls of S = `bytes` each, per micro-step or per step depending on `schedule`;
  /// `per_call_extra_kernels` group-size copies per call (list collectives of old ZeRO-3 releases)
  /// and `extra_seconds` on top of each call.
  void Add(std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes, double calls,
           CommSchedule schedule, StageScope scope = StageScope::kAll, double per_call_extra_kernels = 0,
           double extra_seconds = 0);

  /// The same on a group carved out of the global ranks (hpZ, MiCS, qgZ blocks); `group` is the
  /// table it stands in for in reports; `extra_seconds` per call (ZeRO++ quantization kernels).
  void AddOnBlocks(std::string_view purpose, CollectiveKind kind, GroupKind group, int64_t block, bool strided,
                   double bytes, double calls, CommSchedule schedule, double extra_seconds = 0);

  /// A buffer of `elements` sent in ceil(elements / bucket_elements) calls of equal size.
  void AddBucketed(std::string_view purpose, CollectiveKind kind, GroupKind group, double elements,
                   double bytes_per_element, double bucket_elements, CommSchedule schedule,
                   StageScope scope = StageScope::kAll);

  /// A collective its planner prices itself (DeepEP's two-level dispatch): `seconds_per_call` per
  /// call, `bytes` as the report shows it.
  void AddPriced(std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes, double calls,
                 double seconds_per_call, CommSchedule schedule);

  /// The last collective added can hide entirely (another one carries the unhidable first call).
  void DropFloor();
  /// The last collective added can hide all but `share` of its time per unit (a pipelined overlap
  /// whose first chunk waits).
  void SetFloorShare(double share);
  /// The last collective added, when it is `purpose` (an Add of nothing adds none), runs `repeats`
  /// times a step instead of once, each against its own window: a once-per-step (kBoundaryOverlap)
  /// collective run once per call of the pipeline schedule (EngineSettings::
  /// pipeline_schedule_micro_batches).
  void SetRepeats(std::string_view purpose, double repeats);

  std::vector<PlannedCollective> Take() { return std::move(out_); }

 private:
  void AddOn(const GroupLinkInfo& g, std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes,
             double calls, CommSchedule schedule, StageScope scope, double extra);
  void Push(const GroupLinkInfo& g, std::string_view purpose, CollectiveKind kind, GroupKind group, double bytes,
            double calls, CommSchedule schedule, StageScope scope, double one_call, double one_call_on_link);
  // Every group of a kind is scanned once per (kind, collective): per evaluation, or once per plan
  // when the caller shares a cache across evaluations (tune).
  GroupLinkCache& Cache() { return in_.link_cache != nullptr ? *in_.link_cache : local_cache_; }

  GroupLinkCache local_cache_;
  const SimInput& in_;
  std::vector<PlannedCollective> out_;
};

/// What every planner reads, derived once per PlanCollectives call.
struct PlanContext {
  const SimInput& in;
  const StepTimeOptions& options;
  double bytes_per_element = 2;  // the activations' and parameters' 16-bit width
  double tokens = 0;             // tokens of one micro-batch on one rank (after sequence sharding)
  double hidden = 0;
  double layers = 0;             // layers per pipeline stage
  double moe_layers = 0;         // MoE layers per pipeline stage
  double dense_layers = 0;
  double forward_passes = 1;     // 2 with full recompute: the forward runs again inside backward
  bool tp_sequence_parallel = false;  // TP all-reduces split into all-gather + reduce-scatter
  bool autoep = false;
  bool folding = false;          // AutoEP with TP > 1 (parallel folding)
};
PlanContext MakePlanContext(const SimInput& in, const StepTimeOptions& options);

// One planner per parallelism dimension. Each appends the collectives its dimension issues, in
// the order PlanCollectives has always listed them (reports list collectives in this order).

/// Tensor parallelism: AutoTP's or Megatron's f/g pairs, Megatron's vocab-parallel embedding,
/// lm_head and cross entropy, AutoTP's transformers-plan lm_head and q/k-norm gradient hooks.
void PlanTensorParallel(const PlanContext& ctx, CollectivePlanner& plan);
/// partition_activations: each recomputed layer's input all-gathered over TP first.
void PlanCheckpointPartitionGathers(const PlanContext& ctx, CollectivePlanner& plan);
/// Pipeline parallelism: activations and gradients between stages.
void PlanPipelineParallel(const PlanContext& ctx, CollectivePlanner& plan);
/// The tied embedding's gradient, all-reduced between the first and last stage after the drain.
void PlanTiedEmbeddingGradient(const PlanContext& ctx, double grad_bytes, CollectivePlanner& plan);
/// Sequence parallelism: Ulysses / AutoSP all-to-alls around attention, or the engine's context
/// parallelism (ring p2p or all-gather of K and V).
void PlanSequenceParallel(const PlanContext& ctx, CollectivePlanner& plan);
/// One rank's K and V of one layer for one micro-batch under context parallelism (bytes).
double ContextParallelKvBytes(const PlanContext& ctx);
/// Expert parallelism: AutoEP's dispatch, combine and count exchange, and folding's restore.
void PlanExpertParallel(const PlanContext& ctx, CollectivePlanner& plan);
/// Data parallelism and ZeRO: gradient reduction, ZeRO-1/2 parameter all-gathers, ZeRO-3 gathers
/// (and folding's TP-replicated gradients), as the framework's GradientSync does them.
void PlanDataParallel(const PlanContext& ctx, CollectivePlanner& plan);
/// FSDP2: per-group parameter all-gathers and gradient reduce-scatters (sim/comm/fsdp2_comm.cc).
void PlanFsdp2(const PlanContext& ctx, double grad_bytes, CollectivePlanner& plan);

}  // namespace dsp::sim
