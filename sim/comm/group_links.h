// SPDX-License-Identifier: Apache-2.0
// How fast a collective runs on the groups of one kind: the slowest group sets the pace, since
// every group of the kind runs the collective at the same time. Scanning the groups is O(world),
// so the answers are cached per (kind, collective); tune shares one cache across every
// evaluation of a plan.
#pragma once

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "core/model/model_spec.h"

#include "core/layout/groups.h"
#include "sim/comm/collectives.h"
#include "sim/cost/sim_input.h"

namespace dsp::sim {

struct GroupLinkInfo {
  bool present = false;
  int size = 1;
  bool inter_node = false;
  LinkSpec link;
};

GroupLinkInfo DescribeGroups(const SimInput& in, GroupKind kind, CollectiveKind coll);

// One group's own link for `coll` (DescribeGroups keeps the slowest of a kind's groups).
GroupLinkInfo DescribeGroup(const Cluster& cluster, const RankGroup& group, CollectiveKind coll);

// Groups DeepSpeed builds from global ranks outside the plan's tables: blocks of `block`
// consecutive ranks (hpZ's groups.py _create_zero_param_parallel_group, MiCS's shard groups, qgZ's
// per-node local groups), or with `strided` the ranks at the same position in every block (MiCS's
// replica groups, qgZ's cross-node groups). A block that does not divide the world is clamped.
GroupLinkInfo DescribeRankBlocks(const SimInput& in, CollectiveKind coll, int64_t block, bool strided);

// What depends only on the model, the layout, the engine and the ZeRO settings, memoized across
// evaluations that change the workload alone (tune's micro-batch, accumulation and recompute).
struct PlanMemo {
  using FamilyShares = std::vector<std::pair<ParamFamily, double>>;
  bool has_shares = false;
  FamilyShares outside_layers;                 // one rank's share of each tensor outside layers
  std::map<int, FamilyShares> layer_kinds;     // ... of one layer, by ModelSpec::LayerKind
  bool has_zero3[2] = {false, false};                   // [dense, MoE] layer
  double zero3_modules[2] = {0, 0};
  double zero3_elements[2] = {0, 0};
  double zero3_regathered[2] = {0, 0};
};

// Valid for one plan, one cluster, one model, one engine and one set of ZeRO settings.
class GroupLinkCache {
 public:
  PlanMemo memo;

  const GroupLinkInfo& Get(const SimInput& in, GroupKind kind, CollectiveKind coll) {
    auto key = std::make_pair(static_cast<int>(kind), static_cast<int>(coll));
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, DescribeGroups(in, kind, coll)).first;
    return it->second;
  }

  const GroupLinkInfo& GetBlocks(const SimInput& in, CollectiveKind coll, int64_t block, bool strided) {
    auto key = std::make_tuple(block, strided, static_cast<int>(coll));
    auto it = blocks_.find(key);
    if (it == blocks_.end()) it = blocks_.emplace(key, DescribeRankBlocks(in, coll, block, strided)).first;
    return it->second;
  }

 private:
  std::map<std::pair<int, int>, GroupLinkInfo> cache_;
  std::map<std::tuple<int64_t, bool, int>, GroupLinkInfo> blocks_;
};

}  // namespace dsp::sim
