// SPDX-License-Identifier: Apache-2.0
// BuildGroupTables dispatch plus the small helpers of groups.h. The per-framework arithmetic lives
// in deepspeed_layout.cc, expert_groups.cc and megatron_layout.cc.
#include "core/layout/groups.h"

#include <algorithm>

#include "core/layout/layout_internal.h"

namespace dsp {

std::string_view GroupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp: return "tp";
    case GroupKind::kDp: return "dp";
    case GroupKind::kSp: return "sp";
    case GroupKind::kSpDp: return "sp_dp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kEdp: return "edp";
    case GroupKind::kPp: return "pp";
  }
  return "?";
}

std::string_view ExpertLayoutName(ExpertLayout layout) {
  switch (layout) {
    case ExpertLayout::kAuto: return "auto";
    case ExpertLayout::kExpertsFirst: return "e+d";
    case ExpertLayout::kDataFirst: return "d+e";
    case ExpertLayout::kLaneMajor: return "lane-major";
    case ExpertLayout::kFolding: return "folding";
    case ExpertLayout::kMegatronMpu: return "mpu";
  }
  return "?";
}

Result<GroupTables> BuildGroupTables(const ParallelSizes& sizes, RankLayout layout,
                                     ExpertLayout expert_layout) {
  Result<DerivedSizes> derived = Derive(sizes);
  if (!derived.ok()) return derived.error();
  ParallelSizes normalized = sizes;
  normalized.tp = EffectiveTp(sizes.tp);
  if (layout == RankLayout::kMegatron) {
    return layout_internal::BuildMegatronTables(normalized, *derived, expert_layout);
  }
  return layout_internal::BuildDeepSpeedTables(normalized, *derived, expert_layout);
}

std::vector<RankGroup> GroupsContaining(const std::vector<RankGroup>& groups, int rank) {
  std::vector<RankGroup> found;
  for (const RankGroup& group : groups) {
    if (std::find(group.begin(), group.end(), rank) != group.end()) found.push_back(group);
  }
  return found;
}

bool CrossesNode(const RankGroup& group, int gpus_per_node) {
  if (gpus_per_node <= 0 || group.empty()) return false;
  const int node = group.front() / gpus_per_node;
  return std::any_of(group.begin(), group.end(), [&](int r) { return r / gpus_per_node != node; });
}

namespace layout_internal {

void Canonicalize(std::vector<RankGroup>& groups) {
  // Sweeps over many shapes build tens of thousands of tables in a Debug build, so this avoids
  // comparison sorts where it can: most groups arrive sorted, and disjoint groups have distinct
  // lowest ranks, so one bucket pass over those ranks orders the groups.
  int max_front = -1;
  int min_front = 0;
  bool groups_sorted = true;
  for (size_t g = 0; g < groups.size(); ++g) {
    RankGroup& group = groups[g];
    if (group.empty()) return;  // not a table of process groups; leave it alone
    if (!std::is_sorted(group.data(), group.data() + group.size())) {
      std::sort(group.begin(), group.end());
    }
    if (g > 0 && groups[g - 1].front() >= group.front()) groups_sorted = false;
    max_front = std::max(max_front, group.front());
    min_front = std::min(min_front, group.front());
  }
  if (groups_sorted) return;
  if (min_front < 0) {
    std::sort(groups.begin(), groups.end());
    return;
  }
  std::vector<int> slot(max_front + 1, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    int& s = slot[groups[g].front()];
    if (s != -1) {  // overlapping groups: fall back to a comparison sort
      std::sort(groups.begin(), groups.end());
      return;
    }
    s = static_cast<int>(g);
  }
  std::vector<RankGroup> ordered;
  ordered.reserve(groups.size());
  for (int g : slot) {
    if (g != -1) ordered.push_back(std::move(groups[g]));
  }
  groups = std::move(ordered);
}

}  // namespace layout_internal
}  // namespace dsp
