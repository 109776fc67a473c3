// SPDX-License-Identifier: Apache-2.0
// CachingAllocatorReplay against the rules of PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp: get_free_block's best fit, should_split, get_allocation_size,
// try_merge_blocks, and an expandable segment growing at its end).
#include "sim/cost/caching_allocator.h"

#include <gtest/gtest.h>

namespace dsp::sim {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

TEST(CachingAllocatorTest, RequestsAndSegmentsRoundAsTheAllocatorDoes) {
  EXPECT_EQ(RoundedRequest(1), 512);
  EXPECT_EQ(RoundedRequest(513), 1024);
  EXPECT_EQ(SegmentSizeFor(kMiB / 2), 2 * kMiB);      // small requests share 2 MiB segments
  EXPECT_EQ(SegmentSizeFor(5 * kMiB), 20 * kMiB);     // mid-sized ones 20 MiB
  EXPECT_EQ(SegmentSizeFor(11 * kMiB + 1), 12 * kMiB);  // large ones round up to 2 MiB
  CachingAllocatorReplay a(false);
  a.Allocate(1, 11 * kMiB + 1);
  EXPECT_EQ(a.reserved(), 12 * kMiB);
  EXPECT_EQ(a.allocated(), 12 * kMiB);  // the 1 MiB left is not split off (at most kSmallSize)
}

TEST(CachingAllocatorTest, AFreedBlockServesTheSmallestRequestItFits) {
  CachingAllocatorReplay a(false);
  a.Allocate(1, 100 * kMiB);
  a.Allocate(2, 300 * kMiB);
  a.Free(1);
  a.Free(2);
  a.Allocate(3, 90 * kMiB);   // best fit: the 100 MiB block, 10 MiB split off
  a.Allocate(4, 250 * kMiB);  // the 300 MiB block
  EXPECT_EQ(a.reserved(), 400 * kMiB);
  EXPECT_EQ(a.allocated(), 340 * kMiB);
  a.Allocate(5, 60 * kMiB);   // none of the free pieces (10 and 50 MiB) is large enough
  EXPECT_EQ(a.reserved(), 460 * kMiB);
}

TEST(CachingAllocatorTest, AFreeBlockNeverServesALargerRequest) {
  CachingAllocatorReplay a(false);
  a.Allocate(1, 100 * kMiB);
  a.Free(1);
  a.Allocate(2, 200 * kMiB);
  EXPECT_EQ(a.allocated(), 200 * kMiB);
  EXPECT_EQ(a.reserved(), 300 * kMiB);  // the 100 MiB block stays cached beside it
  EXPECT_EQ(a.peak_reserved() - a.peak_allocated(), 100 * kMiB);
}

TEST(CachingAllocatorTest, FreedNeighboursMergeInsideTheirSegmentOnly) {
  CachingAllocatorReplay a(false);
  a.Allocate(1, 100 * kMiB);
  a.Free(1);
  a.Allocate(2, 40 * kMiB);
  a.Allocate(3, 40 * kMiB);
  a.Free(2);
  a.Free(3);
  a.Allocate(4, 100 * kMiB);  // the three pieces merged back into the 100 MiB segment
  EXPECT_EQ(a.reserved(), 100 * kMiB);

  CachingAllocatorReplay b(false);  // two segments side by side never merge
  b.Allocate(1, 50 * kMiB);
  b.Allocate(2, 50 * kMiB);
  b.Free(1);
  b.Free(2);
  b.Allocate(3, 100 * kMiB);
  EXPECT_EQ(b.reserved(), 200 * kMiB);
}

TEST(CachingAllocatorTest, AnExpandableSegmentGrowsIntoItsFreeEnd) {
  CachingAllocatorReplay a(true);
  a.Allocate(1, 100 * kMiB);
  a.Free(1);
  a.Allocate(2, 150 * kMiB);  // the free 100 MiB at the end plus 50 MiB mapped (in 20 MiB granules)
  EXPECT_EQ(a.reserved(), 160 * kMiB);
  a.Free(2);
  a.Allocate(3, 50 * kMiB);
  a.Allocate(4, 50 * kMiB);
  a.Allocate(5, 50 * kMiB);
  EXPECT_EQ(a.reserved(), 160 * kMiB);  // carved from the one free block
  a.Free(3);  // a hole at the start, not at the end: a larger request maps new pages
  a.Allocate(6, 60 * kMiB);
  // The 10 MiB free at the end is taken in: 50 MiB lacking, mapped as three 20 MiB granules.
  EXPECT_EQ(a.reserved(), 220 * kMiB);
  EXPECT_EQ(a.allocated(), 160 * kMiB);
}

// get_free_block's expandable_size: the free end of an expandable segment counts as the room it
// can grow to, so a free block elsewhere that fits is taken first.
TEST(CachingAllocatorTest, TheFreeEndOfAnExpandableSegmentIsTakenLast) {
  CachingAllocatorReplay a(true);
  a.Allocate(1, 100 * kMiB);
  a.Allocate(2, 100 * kMiB);
  a.Allocate(3, 50 * kMiB);  // 260 MiB mapped, 10 MiB free at the end
  a.Free(1);
  a.Free(3);                 // 60 MiB free at the end
  a.Allocate(4, 40 * kMiB);  // from the 100 MiB hole, not the end
  a.Allocate(5, 70 * kMiB);  // fits neither the 60 MiB left of the hole nor the end: 20 MiB mapped
  EXPECT_EQ(a.reserved(), 280 * kMiB);
}

TEST(CachingAllocatorTest, SmallRequestsHaveAPoolOfTheirOwn) {
  CachingAllocatorReplay a(false);
  a.Allocate(1, 512 * 1024);  // a 2 MiB small segment
  a.Free(1);
  a.Allocate(2, 1536 * 1024);  // large: the free small block does not serve it (a 20 MiB segment)
  EXPECT_EQ(a.reserved(), 22 * kMiB);
  a.Allocate(3, 1000);  // the small segment again
  EXPECT_EQ(a.reserved(), 22 * kMiB);
  EXPECT_EQ(a.allocated(), 1536 * 1024 + 1024);  // each split from its segment
}

TEST(CachingAllocatorTest, PeaksRestartFromWhatIsHeldNow) {
  CachingAllocatorReplay a(false);
  a.Run({{1, 100 * kMiB}, {2, 100 * kMiB}, {1, 0}});
  EXPECT_EQ(a.peak_allocated(), 200 * kMiB);
  a.ResetPeaks();
  EXPECT_EQ(a.peak_allocated(), 100 * kMiB);
  EXPECT_EQ(a.peak_reserved(), 200 * kMiB);
  a.Run({{3, 100 * kMiB}});
  EXPECT_EQ(a.peak_allocated(), 200 * kMiB);
  EXPECT_EQ(a.peak_reserved(), 200 * kMiB);  // the freed block served it
}

}  // namespace
}  // namespace dsp::sim
