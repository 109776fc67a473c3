#include "sim/group_links.h"

#include <algorithm>

namespace dsp::sim {

GroupLinkInfo DescribeGroups(const SimInput& in, GroupKind kind, CollectiveKind coll) {
  GroupLinkInfo info;
  auto it = in.plan->groups.groups.find(kind);
  if (it == in.plan->groups.groups.end() || it->second.empty()) return info;
  info.present = true;
  bool first = true;
  for (const RankGroup& group : it->second) {
    info.size = std::max(info.size, static_cast<int>(group.size()));
    info.inter_node = info.inter_node || CrossesNode(group, in.cluster->gpus_per_node);
    LinkSpec link = GroupLink(coll, group, in.cluster->gpus_per_node, in.cluster->intra_node,
                              in.cluster->inter_node);
    const bool slower = link.busbw_bytes_per_second < info.link.busbw_bytes_per_second ||
                        (link.busbw_bytes_per_second == info.link.busbw_bytes_per_second &&
                         link.latency_seconds > info.link.latency_seconds);
    if (first || slower) info.link = link;
    first = false;
  }
  return info;
}

}  // namespace dsp::sim
