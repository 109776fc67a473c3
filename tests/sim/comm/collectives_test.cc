// SPDX-License-Identifier: Apache-2.0
// nccl-tests busbw factors, the latency + bandwidth time model and the rail-aware group link.
#include "sim/comm/collectives.h"

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

TEST(CollectivesTest, BusBwFactorsAreNcclTestsDefinitions) {
  // doc/PERFORMANCE.md: AllReduce 2(n-1)/n; ReduceScatter, AllGather, AlltoAll (n-1)/n;
  // Broadcast 1.
  for (int n : {2, 3, 4, 8, 16, 64, 1024}) {
    EXPECT_EQ(BusBwFactor(CollectiveKind::kAllReduce, n), 2.0 * (n - 1) / n) << n;
    EXPECT_EQ(BusBwFactor(CollectiveKind::kAllGather, n), static_cast<double>(n - 1) / n) << n;
    EXPECT_EQ(BusBwFactor(CollectiveKind::kReduceScatter, n), static_cast<double>(n - 1) / n) << n;
    EXPECT_EQ(BusBwFactor(CollectiveKind::kAllToAll, n), static_cast<double>(n - 1) / n) << n;
    EXPECT_EQ(BusBwFactor(CollectiveKind::kBroadcast, n), 1.0) << n;
  }
  EXPECT_EQ(BusBwFactor(CollectiveKind::kAllReduce, 8), 1.75);
  EXPECT_EQ(BusBwFactor(CollectiveKind::kAllGather, 8), 0.875);
  // One rank moves nothing.
  EXPECT_EQ(BusBwFactor(CollectiveKind::kAllReduce, 1), 0.0);
  EXPECT_EQ(BusBwFactor(CollectiveKind::kBroadcast, 1), 0.0);
}

TEST(CollectivesTest, OneGibAllReduceOnEightH100s) {
  // 1 GiB all-reduce, 8 GPUs, NVLink4 busbw 370 GB/s, 10 us: 10e-6 + 2^30 x 1.75 / 370e9.
  const LinkSpec nvlink{370e9, 10e-6};
  const double t = CollectiveSeconds(CollectiveKind::kAllReduce, 8, 1073741824.0, nvlink);
  EXPECT_DOUBLE_EQ(t, 0.005088508627027027);
  // The same buffer as an all-gather moves half the bus traffic.
  EXPECT_DOUBLE_EQ(CollectiveSeconds(CollectiveKind::kAllGather, 8, 1073741824.0, nvlink),
                   10e-6 + 1073741824.0 * 0.875 / 370e9);
  // Measuring the predicted time gives the busbw back.
  EXPECT_DOUBLE_EQ(
      MeasuredBusBwBytesPerSecond(CollectiveKind::kAllReduce, 8, 1073741824.0, t - 10e-6), 370e9);
  EXPECT_EQ(CollectiveSeconds(CollectiveKind::kAllReduce, 1, 1e9, nvlink), 0.0);
  EXPECT_EQ(CollectiveSeconds(CollectiveKind::kAllReduce, 8, 0, nvlink), 0.0);
}

TEST(CollectivesTest, KindNames) {
  EXPECT_EQ(CollectiveKindName(CollectiveKind::kAllReduce), "all_reduce");
  EXPECT_EQ(CollectiveKindName(CollectiveKind::kAllGather), "all_gather");
  EXPECT_EQ(CollectiveKindName(CollectiveKind::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(CollectiveKindName(CollectiveKind::kAllToAll), "all_to_all");
  EXPECT_EQ(CollectiveKindName(CollectiveKind::kBroadcast), "broadcast");
}

TEST(CollectivesTest, GroupLinkIsRailAware) {
  const LinkSpec nvlink{370e9, 10e-6}, ndr{48e9, 20e-6};
  // Inside one node (4 GPUs per node): NVLink.
  LinkSpec l = GroupLink(CollectiveKind::kAllReduce, {0, 1, 2, 3}, 4, nvlink, ndr);
  EXPECT_EQ(l.busbw_bytes_per_second, 370e9);
  EXPECT_EQ(l.latency_seconds, 10e-6);
  // One rank per node: a single rail.
  l = GroupLink(CollectiveKind::kAllReduce, {0, 4}, 4, nvlink, ndr);
  EXPECT_EQ(l.busbw_bytes_per_second, 48e9);
  EXPECT_EQ(l.latency_seconds, 20e-6);
  EXPECT_EQ(GroupLink(CollectiveKind::kAllToAll, {0, 4}, 4, nvlink, ndr).busbw_bytes_per_second,
            48e9);
  // Two ranks per node: two ring channels on two rails; an all-to-all's off-node half of the
  // buffer (2 of 4 peers) through one rail: busbw = 48e9 x (4-1)/(4-2).
  EXPECT_EQ(
      GroupLink(CollectiveKind::kAllReduce, {0, 2, 4, 6}, 4, nvlink, ndr).busbw_bytes_per_second,
      96e9);
  EXPECT_EQ(
      GroupLink(CollectiveKind::kAllToAll, {0, 2, 4, 6}, 4, nvlink, ndr).busbw_bytes_per_second,
      72e9);
  // Eight rails beat NVLink on paper; never faster than the intra-node link.
  std::vector<int> all16(16);
  for (int i = 0; i < 16; ++i) all16[i] = i;
  EXPECT_EQ(GroupLink(CollectiveKind::kAllGather, all16, 8, nvlink, ndr).busbw_bytes_per_second,
            370e9);
  // Unknown node size: one node.
  EXPECT_EQ(GroupLink(CollectiveKind::kAllReduce, {0, 4}, 0, nvlink, ndr).busbw_bytes_per_second,
            370e9);
}

}  // namespace
}  // namespace dsp::sim
