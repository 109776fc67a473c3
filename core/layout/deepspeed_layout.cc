// SPDX-License-Identifier: Apache-2.0
// DeepSpeed's layout (deepspeed/utils/groups.py, runtime/pipe/topology.py): PP outermost as in ProcessTopology(pipe, data,
// model); inside a stage the AutoTP (dp, tp) mesh or the Ulysses (dp, sp) mesh, so the model axis
// (tp or sp) is the fastest digit; EP/EDP from one of the code paths in expert_groups.cc.
//
// kAuto reproduces the engine: which path _configure_expert_parallel reaches, and the
// validate_folding_global checks that stop it first (messages quoted from auto_ep_folding.py).
#include <string>
#include <utility>

#include "core/layout/layout_internal.h"

namespace dsp::layout_internal {
namespace {

std::string Str(int v) { return std::to_string(v); }

// Rule d: DeepSpeed rejects expert_tensor_parallel_size != 1 whenever AutoEP is on, even without
// TP; none of DeepSpeed's EP/EDP paths has an expert-TP axis.
Status CheckExpertTensorParallel(const ParallelSizes& s) {
  if (s.etp == 1) return Status::Ok();
  return Error{"expert_parallel.expert_tensor_parallel_size=" + Str(s.etp) +
               " is reserved for expert-internal tensor parallelism and is not supported yet. "
               "Use 1; ETP support is planned as follow-up work."};
}

// The engine's choice of path for kAuto, after validate_folding_global's rules in DeepSpeed's
// order (b, c, d, f, g; c is reported earlier for every layout with tp > 1 and sp > 1).
Result<ExpertLayout> ResolveAuto(const ParallelSizes& s) {
  if (!s.expert_parallel) {
    // No EP groups are built; name the legacy path the flags select (folding needs AutoEP).
    return s.data_before_expert ? ExpertLayout::kDataFirst : ExpertLayout::kExpertsFirst;
  }
  if (s.tp > 1 && s.pp > 1) {
    return Error{"AutoEP+AutoTP folding currently supports pp_size=1 only; got pp_size=" +
                 Str(s.pp) + ". Pipeline-parallel validation is planned separately."};
  }
  if (Status st = CheckExpertTensorParallel(s); !st.ok()) return st.error();
  if (s.tp > 1 && s.ep == 1) {
    return Error{
        "AutoEP+AutoTP folding requires expert_parallel.autoep_size > 1. The ep=1 "
        "local-computation path would duplicate routed-token gradients across TP lanes."};
  }
  if (s.tp > 1 && s.data_before_expert) {
    return Error{
        "expert_parallel with use_data_before_expert_parallel_ is not supported with "
        "AutoEP+AutoTP folding. Disable use_data_before_expert_parallel_."};
  }
  if (s.tp > 1) return ExpertLayout::kFolding;
  if (s.data_before_expert) {
    if (s.sp > 1) {
      // The engine passes mp_size = sp, which takes the mp_size > 1 branch of
      // _create_expert_and_data_parallel, where D+E is not implemented.
      return Error{
          "use_data_before_expert_parallelism is not supported with Ulysses sequence "
          "parallelism (sequence_parallel_size=" +
          Str(s.sp) +
          "): DeepSpeed raises NotImplementedError(\"use_data_before_expert_parallel_ "
          "is not supported with mp_size > 1\")"};
    }
    return ExpertLayout::kDataFirst;
  }
  return ExpertLayout::kExpertsFirst;  // for sp > 1 this is path B' (consecutive), same tables
}

Result<ExpertGroups> BuildExpertGroups(const ParallelSizes& s, int stage, ExpertLayout path) {
  switch (path) {
    case ExpertLayout::kExpertsFirst:
      return LegacyExpertGroups(s.world, stage, s.ep, /*data_before_expert=*/false);
    case ExpertLayout::kDataFirst:
      return LegacyExpertGroups(s.world, stage, s.ep, /*data_before_expert=*/true);
    case ExpertLayout::kLaneMajor:
      return ModelParallelExpertGroups(s.world, stage, s.tp, /*tp_lane_major=*/true, s.ep);
    case ExpertLayout::kFolding: return FoldingExpertGroups(s.world, stage, s.ep);
    case ExpertLayout::kMegatronMpu:
      return MegatronMpuExpertGroups(s.world, s.tp, s.ep, s.pp, s.data_before_expert);
    case ExpertLayout::kAuto: break;
  }
  return Error{"internal error: expert layout was not resolved"};
}

}  // namespace

Result<GroupTables> BuildDeepSpeedTables(const ParallelSizes& s, const DerivedSizes& derived,
                                         ExpertLayout requested) {
  if (s.tp > 1 && s.sp > 1) {
    return Error{"tensor_parallel.autotp_size=" + Str(s.tp) +
                 " and Ulysses sequence parallelism (sequence_parallel_size=" + Str(s.sp) +
                 ") cannot be combined in DeepSpeed: AutoTP's (dp, tp) mesh and Ulysses' (dp, sp) "
                 "mesh both take the adjacent ranks, and AutoEP folding rejects the pair as "
                 "mutually exclusive. Use one of them (Megatron's layout combines TP with CP)."};
  }
  ExpertLayout path = requested;
  if (requested == ExpertLayout::kAuto) {
    Result<ExpertLayout> resolved = ResolveAuto(s);
    if (!resolved.ok()) return resolved.error();
    path = *resolved;
  } else if (s.expert_parallel) {
    if (Status st = CheckExpertTensorParallel(s); !st.ok()) return st.error();
  }

  const int stage = derived.stage;
  GroupTables tables;
  tables.world = s.world;
  tables.layout = RankLayout::kDeepSpeed;
  tables.expert_layout = path;
  auto& g = tables.groups;

  // Only one of tp, sp exceeds 1 here; that axis is the fastest digit inside a stage.
  const int model = s.tp * s.sp;
  std::vector<RankGroup>& dp = g[GroupKind::kDp];
  std::vector<RankGroup>* rows = nullptr;  // TP groups (AutoTP) or SP groups (Ulysses)
  if (s.tp > 1) rows = &g[GroupKind::kTp];
  if (s.sp > 1) rows = &g[GroupKind::kSp];
  for (int stage_start = 0; stage_start < s.world; stage_start += stage) {
    const int stage_end = stage_start + stage;
    // Mesh columns: same model coordinate, every data index.
    for (int lane = 0; lane < model; ++lane) {
      dp.push_back(Range(stage_start + lane, stage_end, model));
    }
    // Mesh rows: contiguous.
    for (int first = stage_start; rows && first < stage_end; first += model) {
      rows->push_back(Range(first, first + model));
    }
    // Ulysses-HF's sequence-data-parallel group: every rank of the stage (tp is 1 here).
    if (s.sp > 1) g[GroupKind::kSpDp].push_back(Range(stage_start, stage_end));
  }
  if (s.pp > 1) {
    // ProcessTopology pipe axis: the ranks with the same (data, model) coordinates.
    std::vector<RankGroup>& pipes = g[GroupKind::kPp];
    for (int local = 0; local < stage; ++local) pipes.push_back(Range(local, s.world, stage));
  }
  if (s.expert_parallel) {
    Result<ExpertGroups> expert = BuildExpertGroups(s, stage, path);
    if (!expert.ok()) return expert.error();
    // The dense loops above emit canonical tables; the expert paths mostly do not ((B), (D)).
    Canonicalize(expert->ep);
    Canonicalize(expert->edp);
    g[GroupKind::kEp] = std::move(expert->ep);
    g[GroupKind::kEdp] = std::move(expert->edp);
  }
  return tables;
}

}  // namespace dsp::layout_internal
