// SPDX-License-Identifier: Apache-2.0
// DeepEpFanout and DeepEpCallSeconds: DeepEP sends a token once per destination rank
// (Buffer.get_dispatch_layout's is_token_in_rank) and once per remote node over RDMA
// (num_tokens_per_rdma_rank), so what it moves depends on where a token's k experts live. NeMo
// AutoModel's FakeBalancedGate (nemo_automodel/components/moe/layers.py at 8d9bfb90) gives token t
// the experts (t k + j) mod E.
#include "sim/comm/deepep_dispatch.h"

#include <gtest/gtest.h>

#include <numeric>

namespace dsp::sim {
namespace {

RankGroup Consecutive(int n, int first = 0) {
  RankGroup g(static_cast<size_t>(n));
  std::iota(g.begin(), g.end(), first);
  return g;
}

// DeepSeek-V3 (256 experts, top-8) over EP 64 on 8 nodes: 4 experts a rank, so 8 consecutive
// experts are two ranks of one node, remote for 7 of the 8 nodes' sources.
TEST(DeepEpDispatchTest, FakeBalancedGateSendsADeepSeekTokenToTwoRanksOfOneNode) {
  const DispatchFanout f = DeepEpFanout(256, 8, Consecutive(64), 8, MoeRouting::kFakeBalanced);
  EXPECT_DOUBLE_EQ(f.ranks, 2.0);
  EXPECT_DOUBLE_EQ(f.nodes, 1.0);
  EXPECT_DOUBLE_EQ(f.remote_nodes, 7.0 / 8.0);
  EXPECT_EQ(f.group_nodes, 8);
  EXPECT_EQ(f.ranks_per_node, 8);
}

// Kimi K2 (384 experts, top-8) over EP 32: 12 experts a rank. Experts 0-7 sit on rank 0, 8-15
// straddle ranks 0 and 1, 16-23 sit on rank 1; the pattern repeats every 3 tokens: 4 / 3 ranks.
TEST(DeepEpDispatchTest, FakeBalancedGateStraddlesRankBoundaries) {
  const DispatchFanout f = DeepEpFanout(384, 8, Consecutive(32), 8, MoeRouting::kFakeBalanced);
  EXPECT_DOUBLE_EQ(f.ranks, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(f.nodes, 1.0);  // 96 experts a node: 8 consecutive never straddle one
  // Qwen3-30B-A3B (128 experts, top-8) over EP 8 in one node: 16 experts a rank, one rank a token.
  const DispatchFanout q = DeepEpFanout(128, 8, Consecutive(8), 8, MoeRouting::kFakeBalanced);
  EXPECT_DOUBLE_EQ(q.ranks, 1.0);
  EXPECT_DOUBLE_EQ(q.remote_nodes, 0.0);
  EXPECT_EQ(q.group_nodes, 1);
}

// A learned router, as k distinct experts drawn uniformly: rank m is missed with probability
// C(E - E/ep, k) / C(E, k).
TEST(DeepEpDispatchTest, UniformRoutingCountsTheExpectedDistinctRanksAndNodes) {
  // One expert a rank: k distinct experts are k distinct ranks.
  EXPECT_DOUBLE_EQ(DeepEpFanout(8, 2, Consecutive(8), 8, MoeRouting::kUniform).ranks, 2.0);
  // 16 experts on two nodes of 8 ranks: a node is missed with probability (8/16)(7/15).
  const DispatchFanout f = DeepEpFanout(16, 2, Consecutive(16), 8, MoeRouting::kUniform);
  const double hit = 1.0 - (8.0 / 16.0) * (7.0 / 15.0);
  EXPECT_NEAR(f.nodes, 2 * hit, 1e-12);
  EXPECT_NEAR(f.remote_nodes, 2 * hit * 0.5, 1e-12);  // each node is the source's for half the ranks
  EXPECT_NEAR(f.ranks, 2.0, 1e-12);
  // DeepSeek-V3's shape, uniformly: 64 (1 - prod (252 - i) / (256 - i)) ranks, about 7.7.
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (252.0 - i) / (256.0 - i);
  EXPECT_NEAR(DeepEpFanout(256, 8, Consecutive(64), 8, MoeRouting::kUniform).ranks, 64 * (1 - miss), 1e-9);
}

// Across nodes the RDMA rows (one per remote node, through the rank's own NIC) and the NVLink
// forwarding run pipelined: the slower of the two, plus the call's latency. Inside a node, an
// all-to-all of one row per destination rank.
TEST(DeepEpDispatchTest, CallSecondsTakeTheSlowerOfRdmaAndNvlink) {
  LinkSpec intra{400e9, 10e-6, 0, 0}, inter{50e9, 20e-6, 0, 0};
  GroupLinkInfo g;
  g.present = true;
  g.size = 64;
  g.link.latency_seconds = 30e-6;
  DispatchFanout f;
  f.ranks = 2.0;
  f.remote_nodes = 0.875;
  f.group_nodes = 8;
  f.ranks_per_node = 8;
  const double tokens = 4096, row = 7168 * 2.0;
  const double rdma = tokens * 0.875 * row / 50e9, nvlink = tokens * 2.0 * 7.0 / 8.0 * row / 400e9;
  ASSERT_GT(rdma, nvlink);
  EXPECT_NEAR(DeepEpCallSeconds(f, tokens, row, g, intra, inter), rdma + 30e-6, 1e-12);
  inter.busbw_bytes_per_second = 1e12;  // a network faster than NVLink: the forwarding sets the pace
  EXPECT_NEAR(DeepEpCallSeconds(f, tokens, row, g, intra, inter), nvlink + 30e-6, 1e-12);

  f.group_nodes = 1;
  g.size = 8;
  g.link = intra;
  EXPECT_DOUBLE_EQ(DeepEpCallSeconds(f, tokens, row, g, intra, inter),
                   CollectiveSeconds(CollectiveKind::kAllToAll, 8, tokens * 2.0 * row, intra));
}

// DeepSeek-V3 routes group-limited (n_group 8, topk_group 4): a token's 8 experts come from 4 of
// the 8 groups of 32, which on EP 64 are the 8 nodes. A node is hit only if its group is chosen
// (1/2) and then not missed by the 8 draws from the chosen 128: 4 (1 - C(96, 8) / C(128, 8))
// nodes, against 5.3 without the limit.
TEST(DeepEpDispatchTest, GroupLimitedRoutingReachesAtMostTopkGroupNodes) {
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (96.0 - i) / (128.0 - i);
  const DispatchFanout f = DeepEpFanout(256, 8, Consecutive(64), 8, MoeRouting::kUniform, 8, 4);
  EXPECT_NEAR(f.nodes, 4 * (1 - miss), 1e-9);
  EXPECT_NEAR(f.remote_nodes, 4 * (1 - miss) * 7.0 / 8.0, 1e-9);
  double rank_miss = 1.0;  // a rank's 4 experts, inside one group
  for (int i = 0; i < 8; ++i) rank_miss *= (124.0 - i) / (128.0 - i);
  EXPECT_NEAR(f.ranks, 64 * 0.5 * (1 - rank_miss), 1e-9);
  // One group (or topk_group = n_group) is no limit.
  const DispatchFanout free = DeepEpFanout(256, 8, Consecutive(64), 8, MoeRouting::kUniform);
  EXPECT_DOUBLE_EQ(DeepEpFanout(256, 8, Consecutive(64), 8, MoeRouting::kUniform, 8, 8).nodes, free.nodes);
  EXPECT_GT(free.nodes, f.nodes);
}

}  // namespace
}  // namespace dsp::sim
