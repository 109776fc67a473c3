// SPDX-License-Identifier: Apache-2.0
// Rank lists of every process group of a job, derived exactly as DeepSpeed builds them (with
// Megatron-core's layout for comparison). References: DeepSpeed 0.19.6 deepspeed/utils/groups.py and
// module_inject/auto_ep_folding.py (paths A, A', B, B', C, D, SP) and Megatron-core's
// parallel_state.py (RankGenerator).
//
// The tables are pure arithmetic: no process groups are created. Every table is in canonical
// form (ranks ascending inside a group, groups ordered by their lowest rank), so two layouts can be
// compared with ==; the order in which a framework *creates* its groups is deliberately dropped.
#pragma once

#include <map>
#include <string_view>
#include <vector>

#include "core/layout/parallel_sizes.h"
#include "core/util/result.h"

namespace dsp {

/// Group families. A kind is present in GroupTables only when it is in use:
///   tp     when tp > 1                 (AutoTP / Megatron tensor parallel)
///   dp     always                      (dense data parallel)
///   sp     when sp > 1                 (Ulysses SP / Megatron CP)
///   sp_dp  when sp > 1                 (DeepSpeed sequence-data-parallel / Megatron dp-cp)
///   ep     when expert_parallel        (expert parallel: token all-to-all)
///   edp    when expert_parallel        (expert data parallel: expert gradient reduction)
///   pp     when pp > 1                 (pipeline: one rank per stage)
enum class GroupKind { kTp, kDp, kSp, kSpDp, kEp, kEdp, kPp };

/// "tp", "dp", "sp", "sp_dp", "ep", "edp", "pp".
std::string_view GroupKindName(GroupKind kind);

/// Whose rank layout to reproduce.
enum class RankLayout {
  kDeepSpeed,  // DeepSpeed at edaa722 (AutoTP mesh, Ulysses, ProcessTopology, AutoEP paths)
  kMegatron,   // Megatron-core RankGenerator, order "tp-cp-ep-dp-pp" (MoE parallel folding)
};

/// DeepSpeed's EP/EDP code paths (deepspeed/utils/groups.py).
///
/// kAuto picks what the DeepSpeed engine builds for the sizes and applies the engine's checks
/// (validate_folding_global rules b, d, f, g; the D+E NotImplementedError): folding (C) when
/// expert_parallel && tp > 1; (A') when data_before_expert; else (A) (which equals B' for sp-mode).
/// An explicit path computes that code path's tables with only that path's own assertions, as a
/// "what if": e.g. kFolding with pp > 1 yields tables although the engine rejects the combination.
/// The Megatron layout always folds: it accepts kAuto or kFolding and resolves to kFolding.
enum class ExpertLayout {
  kAuto,
  kExpertsFirst,  // (A)  legacy E+D: EP contiguous, EDP strided by EP
  kDataFirst,     // (A') legacy D+E: EDP contiguous, EP strided by stage/EP
  kLaneMajor,     // (B)  non-folded tp-mode: EP = chunks of the TP-lane-major order
  kFolding,       // (C)  AutoEP+AutoTP folding: same EP/EDP as (A)
  kMegatronMpu,   // (D)  _get_expert_parallel_ranks: EP carved from each TP-lane DP group
};

/// "auto", "e+d", "d+e", "lane-major", "folding", "mpu".
std::string_view ExpertLayoutName(ExpertLayout layout);

/// Global ranks of one process group, ascending.
using RankGroup = std::vector<int>;

/// Every group of every kind in use.
struct GroupTables {
  int world = 0;
  RankLayout layout = RankLayout::kDeepSpeed;
  ExpertLayout expert_layout = ExpertLayout::kExpertsFirst;  // resolved (never kAuto)
  // Only kinds in use; each group ascending; groups sorted by lowest rank.
  std::map<GroupKind, std::vector<RankGroup>> groups;
};

/// Derives all group tables. Errors (as values): anything Derive() rejects; tp > 1 together with
/// sp > 1 in the DeepSpeed layout (AutoTP and Ulysses cannot be combined in DeepSpeed); the engine
/// checks listed under ExpertLayout for kAuto; path (D)'s `dp % ep == 0` assertion; a DeepSpeed
/// path requested for the Megatron layout.
Result<GroupTables> BuildGroupTables(const ParallelSizes& sizes,
                                     RankLayout layout = RankLayout::kDeepSpeed,
                                     ExpertLayout expert_layout = ExpertLayout::kAuto);

/// The groups that contain `rank` (one per kind for a valid table; used for --rank).
std::vector<RankGroup> GroupsContaining(const std::vector<RankGroup>& groups, int rank);

/// True when the group spans more than one node, i.e. the values rank / gpus_per_node differ.
/// A non-positive gpus_per_node means "unknown" and yields false.
bool CrossesNode(const RankGroup& group, int gpus_per_node);

}  // namespace dsp
