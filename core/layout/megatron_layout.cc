// SPDX-License-Identifier: Apache-2.0
// Megatron-core's layout (megatron/core/parallel_state.py initialize_model_parallel): two RankGenerators over the same ranks with
// the default order "tp-cp-ep-dp-pp" -- dense (tp, cp = our sp, dp, pp; ep = 1) and expert
// (tp = etp, ep, dp = edp, pp; cp = 1). This is "MoE parallel folding": inside a pipeline stage
// the expert factorization is independent of the dense one.
#include <string>
#include <utility>

#include "core/layout/layout_internal.h"
#include "core/layout/megatron_rank_generator.h"

namespace dsp::layout_internal {
namespace {

constexpr std::string_view kOrder = "tp-cp-ep-dp-pp";

// get_ranks(token) of `gen` into tables.groups[kind]. No Canonicalize: the generator emits groups
// in increasing order of their lowest rank with ascending ranks (parallel_state.py generate_masked_orthogonal_rank_groups), which
// the property tests check on every shape up to 64 ranks.
Status Put(const megatron::RankGenerator& gen, std::string_view token, GroupKind kind,
           GroupTables& tables) {
  auto ranks = gen.GetRanks(token);
  if (!ranks.ok()) return ranks.error();
  tables.groups[kind] = std::move(*ranks);
  return Status::Ok();
}

}  // namespace

Result<GroupTables> BuildMegatronTables(const ParallelSizes& s, const DerivedSizes& derived,
                                        ExpertLayout requested) {
  if (requested != ExpertLayout::kAuto && requested != ExpertLayout::kFolding) {
    return Error{"expert layout '" + std::string(ExpertLayoutName(requested)) +
                 "' is a DeepSpeed code path; the Megatron layout always folds (use 'auto' or "
                 "'folding')"};
  }
  GroupTables tables;
  tables.world = s.world;
  tables.layout = RankLayout::kMegatron;
  tables.expert_layout = ExpertLayout::kFolding;

  // Megatron's dense DP is world / (tp * pp * cp), which Derive computed as dp.
  auto dense =
      megatron::RankGenerator::Create(s.tp, /*ep=*/1, derived.dp, s.pp, /*cp=*/s.sp, kOrder);
  if (!dense.ok()) return dense.error();
  // Megatron's get_ranks tokens for our kinds; sp_dp is _DATA_PARALLEL_GROUP_WITH_CP ("dp-cp").
  const std::pair<std::string_view, GroupKind> dense_kinds[] = {{"tp", GroupKind::kTp},
                                                                {"dp", GroupKind::kDp},
                                                                {"cp", GroupKind::kSp},
                                                                {"dp-cp", GroupKind::kSpDp},
                                                                {"pp", GroupKind::kPp}};
  for (const auto& [token, kind] : dense_kinds) {
    const bool in_use = kind == GroupKind::kDp || (kind == GroupKind::kTp && s.tp > 1) ||
                        ((kind == GroupKind::kSp || kind == GroupKind::kSpDp) && s.sp > 1) ||
                        (kind == GroupKind::kPp && s.pp > 1);
    if (!in_use) continue;
    if (Status st = Put(*dense, token, kind, tables); !st.ok()) return st.error();
  }

  // Expert generator: tp = etp, dp = edp. Its "tp" (ETP) and "tp-ep" groups have no kind here.
  if (s.expert_parallel) {
    auto expert = megatron::RankGenerator::Create(s.etp, s.ep, derived.edp, s.pp, /*cp=*/1, kOrder);
    if (!expert.ok()) return expert.error();
    if (Status st = Put(*expert, "ep", GroupKind::kEp, tables); !st.ok()) return st.error();
    if (Status st = Put(*expert, "dp", GroupKind::kEdp, tables); !st.ok()) return st.error();
    // initialize_model_parallel asserts this; with a pp-last order it always holds (and with
    // pp == 1 both sides are singletons).
    if (s.pp > 1) {
      auto expert_pp = expert->GetRanks("pp");
      if (!expert_pp.ok() || *expert_pp != tables.groups[GroupKind::kPp]) {
        return Error{
            "Pipeline parallel groups are expected to be the same for Non-Expert and "
            "Expert part"};
      }
    }
  }
  return tables;
}

}  // namespace dsp::layout_internal
