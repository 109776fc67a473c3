// SPDX-License-Identifier: Apache-2.0
// nccl-tests factors and the latency + bandwidth time model (see collectives.h).
#include "sim/comm/collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/layout/groups.h"

namespace dsp::sim {

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kSendRecv:
      return "send_recv";
  }
  return "unknown";
}

double BusBwFactor(CollectiveKind kind, int ranks) {
  if (ranks <= 1) return 0.0;
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (n - 1.0) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kSendRecv:
      return 1.0;
  }
  return 0.0;
}

double CollectiveSeconds(CollectiveKind kind, int ranks, double bytes, const LinkSpec& link) {
  if (ranks <= 1 || bytes <= 0) return 0.0;
  if (link.busbw_bytes_per_second <= 0) return std::numeric_limits<double>::infinity();
  return link.latency_seconds + bytes * BusBwFactor(kind, ranks) / link.busbw_bytes_per_second;
}

double MeasuredBusBwBytesPerSecond(CollectiveKind kind, int ranks, double bytes, double seconds) {
  if (seconds <= 0) return 0.0;
  return bytes / seconds * BusBwFactor(kind, ranks);
}

double CallLatencySeconds(CollectiveKind kind, int ranks, int nodes, int ranks_per_node,
                          const LinkSpec& intra_node, const LinkSpec& inter_node) {
  if (ranks <= 1) return 0.0;
  const double n = ranks;
  const bool multi_node = nodes > 1;
  const double base = multi_node ? inter_node.latency_seconds : intra_node.latency_seconds;
  // A ring moves in lockstep: step k on a rank needs step k - 1 of its neighbour, so every step
  // waits for the ring's slowest hop, the network one as soon as the ring leaves a node.
  const double step = multi_node ? std::max(inter_node.hop_latency_seconds, intra_node.hop_latency_seconds)
                                 : intra_node.hop_latency_seconds;
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      // Ring: reduce-scatter then all-gather, 2(n - 1) steps. Tree (NCCL's double binary tree,
      // multi-node only): up and down log2(nodes) network levels and a chain of ranks_per_node
      // inside each node. NCCL picks the faster; at equal bandwidth that is the lower latency.
      const double ring = base + 2.0 * (n - 1.0) * step;
      if (!multi_node) return ring;
      const double tree =
          base + 2.0 * ((ranks_per_node - 1.0) * intra_node.hop_latency_seconds +
                        std::ceil(std::log2(static_cast<double>(nodes))) *
                            inter_node.hop_latency_seconds);
      return std::min(ring, tree);
    }
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kBroadcast:
      return base + (n - 1.0) * step;  // ring: n - 1 steps (NCCL has no tree for these)
    case CollectiveKind::kSendRecv:
      // One hop to the neighbouring stage.
      return base + (multi_node ? inter_node.hop_latency_seconds : intra_node.hop_latency_seconds);
    case CollectiveKind::kAllToAll:
      // n - 1 concurrent send/receive pairs: one hop, plus a per-peer set-up cost of an
      // intra-node hop each.
      return base + (n - 1.0) * intra_node.hop_latency_seconds +
             (multi_node ? inter_node.hop_latency_seconds : intra_node.hop_latency_seconds);
  }
  return base;
}

LinkSpec GroupLink(CollectiveKind kind, const std::vector<int>& group, int gpus_per_node,
                   const LinkSpec& intra_node, const LinkSpec& inter_node) {
  const int n = static_cast<int>(group.size());
  if (!CrossesNode(group, gpus_per_node)) {
    LinkSpec link = intra_node;
    link.latency_seconds = CallLatencySeconds(kind, n, 1, n, intra_node, inter_node);
    link.hop_latency_seconds = 0;
    return link;
  }
  // Groups hold ascending ranks, so each node's members form one run: k = the shortest run.
  int k = std::numeric_limits<int>::max();
  int run = 0, nodes = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    ++run;
    if (i + 1 == group.size() || group[i + 1] / gpus_per_node != group[i] / gpus_per_node) {
      k = std::min(k, run);
      run = 0;
      ++nodes;
    }
  }
  const double nd = static_cast<double>(n);
  // Ring channels: one per rail, so k rails carry the ring in parallel. All-to-all: each rank's
  // off-node share (n-k)/n goes through its own rail; scaled to nccl-tests' (n-1)/n convention.
  // A point-to-point transfer between stages uses one rail.
  double used = static_cast<double>(k);
  if (inter_node.max_rails > 0) used = std::min(used, inter_node.max_rails);
  double rails = used;
  if (kind == CollectiveKind::kAllToAll) rails = std::min(used, (nd - 1.0) / (nd - k));
  if (kind == CollectiveKind::kSendRecv) rails = 1.0;
  LinkSpec link = inter_node;
  link.busbw_bytes_per_second =
      std::min(intra_node.busbw_bytes_per_second, inter_node.busbw_bytes_per_second * rails);
  link.latency_seconds = CallLatencySeconds(kind, n, nodes, k, intra_node, inter_node);
  link.hop_latency_seconds = 0;
  return link;
}

}  // namespace dsp::sim
