// SPDX-License-Identifier: Apache-2.0
// One source of truth per collective: nccl-tests' bus-bandwidth factors and the time model built on
// them (nccl-tests doc/PERFORMANCE.md). The simulator predicts with
// these functions and a measurement harness reports busbw with the same ones, so predicted and
// measured numbers compare directly.
//
// Conventions (nccl-tests): S is the full buffer. For all-reduce and broadcast that is the
// per-rank buffer; for all-gather the gathered output (sendcount x n); for reduce-scatter the input
// (recvcount x n); for all-to-all a rank's whole send buffer. algbw = S / t, busbw = algbw x
// factor, and busbw is what a link sustains independently of n, so t = latency + S x factor /
// busbw.
#pragma once

#include <string_view>
#include <vector>

#include "sim/cost/cluster.h"

namespace dsp::sim {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv" (a
/// pipeline stage's point-to-point transfer to its neighbour).
std::string_view CollectiveKindName(CollectiveKind kind);

/// nccl-tests' busbw / algbw factor for n ranks: all-reduce 2(n-1)/n; all-gather, reduce-scatter
/// and all-to-all (n-1)/n; broadcast and send/recv 1. A group of one rank moves nothing: 0 for every kind.
double BusBwFactor(CollectiveKind kind, int ranks);

/// Seconds for one call moving S = `bytes` over `ranks` ranks on `link`:
/// latency + S x factor / busbw. 0 when ranks <= 1 or bytes <= 0 (no call is issued).
double CollectiveSeconds(CollectiveKind kind, int ranks, double bytes, const LinkSpec& link);

/// The inverse, for measured runs: busbw = (S / seconds) x factor (nccl-tests *GetBw).
double MeasuredBusBwBytesPerSecond(CollectiveKind kind, int ranks, double bytes, double seconds);

/// Fixed seconds of one call over `ranks` ranks spread over `nodes` nodes (at least
/// `ranks_per_node` on each): the link's per-call latency plus the algorithm's steps, each as long
/// as the slowest hop it crosses (a ring of n ranks takes n - 1 lockstep steps, 2(n - 1) to
/// all-reduce, each waiting on the network hop once the ring spans nodes); NCCL's tree all-reduce
/// 2 x (chain in the node + log2(nodes) network levels), the lower of ring and tree for
/// all-reduce (per-hop latencies as in NCCL's src/graph/tuning.cc).
double CallLatencySeconds(CollectiveKind kind, int ranks, int nodes, int ranks_per_node,
                          const LinkSpec& intra_node, const LinkSpec& inter_node);

/// The link a collective over `group` runs on, with `latency_seconds` the whole fixed cost of
/// one call (CallLatencySeconds) and `hop_latency_seconds` folded into it (0). A group inside one node uses the intra-node link.
/// A group that spans nodes uses the network, rail-aware: each GPU
/// owns one rail of inter_node.busbw, and NCCL runs one ring channel per rail, so ring-based kinds
/// reach k x rail busbw when every node holds k ranks of the group (k = the fewest on any node);
/// an all-to-all sends the (n-k)/n of its buffer that leaves the node through the rank's own rail,
/// i.e. busbw = rail x (n-1)/(n-k). Never faster than the intra-node link. gpus_per_node <= 0 means unknown: treated as one node.
LinkSpec GroupLink(CollectiveKind kind, const std::vector<int>& group, int gpus_per_node,
                   const LinkSpec& intra_node, const LinkSpec& inter_node);

}  // namespace dsp::sim
