// SPDX-License-Identifier: Apache-2.0
#include "sim/comm/group_links.h"

#include <algorithm>
#include <numeric>

namespace dsp::sim {

GroupLinkInfo DescribeGroup(const Cluster& cluster, const RankGroup& group, CollectiveKind coll) {
  GroupLinkInfo info;
  info.present = true;
  info.size = static_cast<int>(group.size());
  info.inter_node = CrossesNode(group, cluster.gpus_per_node);
  info.link = GroupLink(coll, group, cluster.gpus_per_node, cluster.intra_node, cluster.inter_node);
  return info;
}

GroupLinkInfo DescribeGroups(const SimInput& in, GroupKind kind, CollectiveKind coll) {
  GroupLinkInfo info;
  auto it = in.plan->groups.groups.find(kind);
  if (it == in.plan->groups.groups.end() || it->second.empty()) return info;
  info.present = true;
  bool first = true;
  for (const RankGroup& group : it->second) {
    const GroupLinkInfo one = DescribeGroup(*in.cluster, group, coll);
    info.size = std::max(info.size, one.size);
    info.inter_node = info.inter_node || one.inter_node;
    const LinkSpec& link = one.link;
    const bool slower = link.busbw_bytes_per_second < info.link.busbw_bytes_per_second ||
                        (link.busbw_bytes_per_second == info.link.busbw_bytes_per_second &&
                         link.latency_seconds > info.link.latency_seconds);
    if (first || slower) info.link = link;
    first = false;
  }
  return info;
}

GroupLinkInfo DescribeRankBlocks(const SimInput& in, CollectiveKind coll, int64_t block, bool strided) {
  GroupLinkInfo info;
  const int64_t world = std::max<int64_t>(in.plan->sizes.world, 1);
  block = std::clamp<int64_t>(block, 1, world);
  if (world % block != 0) block = std::gcd(world, block);
  const int64_t blocks = world / block;
  const int64_t groups = strided ? block : blocks;
  const int64_t size = strided ? blocks : block;
  info.present = true;
  info.size = static_cast<int>(size);
  bool first = true;
  for (int64_t g = 0; g < groups; ++g) {
    RankGroup group;
    group.reserve(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) {
      group.push_back(static_cast<int>(strided ? g + i * block : g * block + i));
    }
    info.inter_node = info.inter_node || CrossesNode(group, in.cluster->gpus_per_node);
    LinkSpec link = GroupLink(coll, group, in.cluster->gpus_per_node, in.cluster->intra_node,
                              in.cluster->inter_node);
    if (first || link.busbw_bytes_per_second < info.link.busbw_bytes_per_second ||
        (link.busbw_bytes_per_second == info.link.busbw_bytes_per_second &&
         link.latency_seconds > info.link.latency_seconds)) {
      info.link = link;
    }
    first = false;
  }
  return info;
}

}  // namespace dsp::sim
