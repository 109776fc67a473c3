// nccl-tests factors and the latency + bandwidth time model (see collectives.h).
#include "sim/collectives.h"

#include <algorithm>
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

LinkSpec GroupLink(CollectiveKind kind, const std::vector<int>& group, int gpus_per_node,
                   const LinkSpec& intra_node, const LinkSpec& inter_node) {
  if (!CrossesNode(group, gpus_per_node)) return intra_node;
  // Groups hold ascending ranks, so each node's members form one run: k = the shortest run.
  int k = std::numeric_limits<int>::max();
  int run = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    ++run;
    if (i + 1 == group.size() || group[i + 1] / gpus_per_node != group[i] / gpus_per_node) {
      k = std::min(k, run);
      run = 0;
    }
  }
  const double n = static_cast<double>(group.size());
  // Ring channels: one per rail, so k rails carry the ring in parallel. All-to-all: each rank's
  // off-node share (n-k)/n goes through its own rail; scaled to nccl-tests' (n-1)/n convention.
  const double rails =
      kind == CollectiveKind::kAllToAll ? (n - 1.0) / (n - k) : static_cast<double>(k);
  LinkSpec link = inter_node;
  link.busbw_bytes_per_second =
      std::min(intra_node.busbw_bytes_per_second, inter_node.busbw_bytes_per_second * rails);
  return link;
}

}  // namespace dsp::sim
