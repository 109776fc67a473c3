// How fast a collective runs on the groups of one kind: the slowest group sets the pace, since
// every group of the kind runs the collective at the same time. Scanning the groups is O(world),
// so the answers are cached per (kind, collective); tune shares one cache across every
// evaluation of a plan.
#pragma once

#include <map>
#include <utility>

#include "core/layout/groups.h"
#include "sim/collectives.h"
#include "sim/sim_input.h"

namespace dsp::sim {

struct GroupLinkInfo {
  bool present = false;
  int size = 1;
  bool inter_node = false;
  LinkSpec link;
};

GroupLinkInfo DescribeGroups(const SimInput& in, GroupKind kind, CollectiveKind coll);

// Valid for one plan and one cluster.
class GroupLinkCache {
 public:
  const GroupLinkInfo& Get(const SimInput& in, GroupKind kind, CollectiveKind coll) {
    auto key = std::make_pair(static_cast<int>(kind), static_cast<int>(coll));
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, DescribeGroups(in, kind, coll)).first;
    return it->second;
  }

 private:
  std::map<std::pair<int, int>, GroupLinkInfo> cache_;
};

}  // namespace dsp::sim
