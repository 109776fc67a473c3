// SPDX-License-Identifier: Apache-2.0
#include "sim/comm/deepep_dispatch.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

namespace dsp::sim {
namespace {

// P(none of k distinct experts drawn uniformly from E is among `held` of them).
double MissProbability(double experts, double held, int64_t top_k) {
  double p = 1.0;
  for (int64_t i = 0; i < top_k; ++i) {
    const double left = experts - static_cast<double>(i);
    if (left <= 0) return 0.0;
    p *= std::max(0.0, left - held) / left;
  }
  return p;
}

double Choose(double n, double r) {
  if (r < 0 || r > n) return 0.0;
  return std::exp(std::lgamma(n + 1) - std::lgamma(r + 1) - std::lgamma(n - r + 1));
}

// P(a token misses every expert of [first, last)) when its k experts are drawn uniformly from the
// experts of topk_group of the n_group contiguous groups, themselves drawn uniformly: over which of
// the groups the range touches are chosen (at most a few: the range is contiguous).
double GroupLimitedMiss(int64_t first, int64_t last, int64_t experts, int64_t top_k, int64_t n_group,
                        int64_t topk_group) {
  const int64_t size = experts / n_group;
  std::vector<double> held;  // experts of the range in each group it touches
  for (int64_t g = first / size; g * size < last; ++g) {
    held.push_back(static_cast<double>(std::min(last, (g + 1) * size) - std::max(first, g * size)));
  }
  const int touched = static_cast<int>(held.size());
  if (touched > 16) return MissProbability(static_cast<double>(experts), static_cast<double>(last - first), top_k);
  const double pool = static_cast<double>(topk_group * size);
  const double all = Choose(static_cast<double>(n_group), static_cast<double>(topk_group));
  double miss = 0;
  for (uint32_t mask = 0; mask < (1u << touched); ++mask) {
    const int chosen = std::popcount(mask);
    if (chosen > topk_group) continue;
    double in_chosen = 0;
    for (int i = 0; i < touched; ++i) {
      if (mask & (1u << i)) in_chosen += held[static_cast<size_t>(i)];
    }
    // Exactly these touched groups among the chosen, the rest from the untouched ones.
    const double p = Choose(static_cast<double>(n_group - touched), static_cast<double>(topk_group - chosen)) / all;
    miss += p * MissProbability(pool, in_chosen, top_k);
  }
  return miss;
}

}  // namespace

DispatchFanout DeepEpFanout(int64_t experts, int64_t top_k, const RankGroup& group, int gpus_per_node,
                            MoeRouting routing, int64_t n_group, int64_t topk_group) {
  DispatchFanout f;
  const int64_t ep = static_cast<int64_t>(group.size());
  if (ep <= 0 || experts <= 0 || top_k <= 0) return f;
  top_k = std::min(top_k, experts);
  const int gpn = std::max(gpus_per_node, 1);
  // The member holding expert e, and each member's node as an index 0..nodes-1.
  auto member_of = [&](int64_t e) { return static_cast<int>(e * ep / experts); };
  std::vector<int> node_of(static_cast<size_t>(ep));
  std::map<int, int> node_index;
  for (int64_t m = 0; m < ep; ++m) {
    const int node = group[static_cast<size_t>(m)] / gpn;
    auto it = node_index.emplace(node, static_cast<int>(node_index.size())).first;
    node_of[static_cast<size_t>(m)] = it->second;
  }
  const int nodes = static_cast<int>(node_index.size());
  std::vector<double> members_on(static_cast<size_t>(nodes), 0.0);
  for (int n : node_of) members_on[static_cast<size_t>(n)] += 1.0;
  f.group_nodes = nodes;
  f.ranks_per_node = static_cast<int>(*std::min_element(members_on.begin(), members_on.end()));
  // A source rank on node n sees the token's nodes other than n as remote: averaged over the
  // sources, a node the token hits is local for members_on[n] / ep of them.
  const double ep_d = static_cast<double>(ep);

  if (routing == MoeRouting::kFakeBalanced) {
    // Token t's experts start at (t k) mod E: the pattern repeats every E / gcd(E, k) tokens.
    const int64_t period = experts / std::gcd(experts, top_k);
    std::vector<char> hit_member(static_cast<size_t>(ep)), hit_node(static_cast<size_t>(nodes));
    double ranks = 0, hit_nodes = 0, local = 0;
    for (int64_t t = 0; t < period; ++t) {
      std::fill(hit_member.begin(), hit_member.end(), 0);
      std::fill(hit_node.begin(), hit_node.end(), 0);
      for (int64_t j = 0; j < top_k; ++j) {
        const int m = member_of((t * top_k + j) % experts);
        if (!hit_member[static_cast<size_t>(m)]) ranks += 1, hit_member[static_cast<size_t>(m)] = 1;
        const int n = node_of[static_cast<size_t>(m)];
        if (!hit_node[static_cast<size_t>(n)]) {
          hit_nodes += 1, hit_node[static_cast<size_t>(n)] = 1;
          local += members_on[static_cast<size_t>(n)] / ep_d;
        }
      }
    }
    const double p = static_cast<double>(period);
    f.ranks = ranks / p;
    f.nodes = hit_nodes / p;
    f.remote_nodes = (hit_nodes - local) / p;
    return f;
  }

  // Uniform: member m is hit unless all k experts avoid its share, likewise each node (the
  // members of a node hold one contiguous range: groups are consecutive ranks).
  const double e_d = static_cast<double>(experts);
  const bool limited = n_group > 1 && topk_group < n_group && experts % n_group == 0;
  auto miss = [&](int64_t first, int64_t last) {
    return limited ? GroupLimitedMiss(first, last, experts, top_k, n_group, topk_group)
                   : MissProbability(e_d, static_cast<double>(last - first), top_k);
  };
  std::vector<int64_t> node_first(static_cast<size_t>(nodes), experts), node_last(static_cast<size_t>(nodes), 0);
  for (int64_t m = 0; m < ep; ++m) {
    // Experts e with member_of(e) == m: [ceil(m E / ep), ceil((m + 1) E / ep)).
    const int64_t first = (m * experts + ep - 1) / ep, last = ((m + 1) * experts + ep - 1) / ep;
    f.ranks += 1.0 - miss(first, last);
    const size_t n = static_cast<size_t>(node_of[static_cast<size_t>(m)]);
    node_first[n] = std::min(node_first[n], first);
    node_last[n] = std::max(node_last[n], last);
  }
  for (int n = 0; n < nodes; ++n) {
    const double hit = 1.0 - miss(node_first[static_cast<size_t>(n)], node_last[static_cast<size_t>(n)]);
    f.nodes += hit;
    f.remote_nodes += hit * (1.0 - members_on[static_cast<size_t>(n)] / ep_d);
  }
  return f;
}

double DeepEpCallSeconds(const DispatchFanout& fanout, double tokens, double row_bytes, const GroupLinkInfo& g,
                         const LinkSpec& intra_node, const LinkSpec& inter_node) {
  if (!g.present || g.size <= 1 || tokens <= 0) return 0.0;
  const double rows = tokens * fanout.ranks;
  if (fanout.group_nodes <= 1) return CollectiveSeconds(CollectiveKind::kAllToAll, g.size, rows * row_bytes, g.link);
  // RDMA: one row per remote node through the rank's own NIC. NVLink: every (token, rank) row but
  // those whose forwarding GPU is their destination.
  const double k = static_cast<double>(std::max(fanout.ranks_per_node, 1));
  // A node drives at most max_rails of its NICs at once (LinkSpec::max_rails): its k ranks share them.
  const double nic = inter_node.busbw_bytes_per_second *
                     (inter_node.max_rails > 0 ? std::min(1.0, inter_node.max_rails / k) : 1.0);
  const double rdma = nic > 0 ? tokens * fanout.remote_nodes * row_bytes / nic : 0.0;
  const double nvlink = intra_node.busbw_bytes_per_second > 0
                            ? rows * (k - 1.0) / k * row_bytes / intra_node.busbw_bytes_per_second
                            : 0.0;
  return std::max(rdma, nvlink) + g.link.latency_seconds;
}

}  // namespace dsp::sim
