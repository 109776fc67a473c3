// SPDX-License-Identifier: Apache-2.0
// Internal to core/layout: the per-framework table builders behind BuildGroupTables and the
// DeepSpeed EP/EDP code paths. Exposed in a header so the tests can pin each path separately.
#pragma once

#include <vector>

#include "core/layout/groups.h"
#include "core/layout/parallel_sizes.h"
#include "core/util/result.h"

namespace dsp::layout_internal {

/// Sorts the ranks of every group and orders the groups by their lowest rank.
void Canonicalize(std::vector<RankGroup>& groups);

/// Python's list(range(begin, end, step)) for step > 0.
inline RankGroup Range(int begin, int end, int step = 1) {
  RankGroup ranks;
  ranks.reserve(end > begin ? (end - begin + step - 1) / step : 0);
  for (int r = begin; r < end; r += step) ranks.push_back(r);
  return ranks;
}

/// EP and EDP rank lists of one DeepSpeed code path, in the order DeepSpeed creates them.
struct ExpertGroups {
  std::vector<RankGroup> ep;
  std::vector<RankGroup> edp;
};

// Each function mirrors the loops of deepspeed/utils/groups.py (or auto_ep_folding.py) at
// edaa722. Preconditions checked by the caller (Derive): stage | world, ep | stage, mp | stage.

/// (A) / (A'): _create_expert_and_data_parallel, legacy branch (mp_size <= 1).
ExpertGroups LegacyExpertGroups(int world, int stage, int ep, bool data_before_expert);

/// (B) / (B'): _create_expert_and_data_parallel, mp_size > 1 branch. `tp_lane_major` is
/// mp_mode == "tp": the stage is re-ordered lane by lane before EP chunks are cut.
ExpertGroups ModelParallelExpertGroups(int world, int stage, int mp_size, bool tp_lane_major,
                                       int ep);

/// (C): expected_folding_group_tables(spec), EP/EDP part (consecutive EP chunks per stage).
ExpertGroups FoldingExpertGroups(int world, int stage, int ep);

/// (D): _get_expert_parallel_ranks(world, tp, ep, pp, use_data_before). Returns its
/// _ensure_divisibility failures (world % (tp*pp), dp % ep) as Errors.
Result<ExpertGroups> MegatronMpuExpertGroups(int world, int tp, int ep, int pp,
                                             bool data_before_expert);

/// The DeepSpeed layout (deepspeed_layout.cc). `sizes.tp` is already normalised (>= 1).
Result<GroupTables> BuildDeepSpeedTables(const ParallelSizes& sizes, const DerivedSizes& derived,
                                         ExpertLayout requested);

/// The Megatron-core layout (megatron_layout.cc). `sizes.tp` is already normalised (>= 1).
Result<GroupTables> BuildMegatronTables(const ParallelSizes& sizes, const DerivedSizes& derived,
                                        ExpertLayout requested);

}  // namespace dsp::layout_internal
