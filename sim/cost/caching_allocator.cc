// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/caching_allocator.h"

#include <algorithm>

namespace dsp::sim {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kMinBlockSize = 512;      // round_size's granule
constexpr int64_t kSmallSize = 1 * kMiB;    // largest "small" request; should_split's threshold
constexpr int64_t kSmallBuffer = 2 * kMiB;  // segment of small requests
constexpr int64_t kLargeBuffer = 20 * kMiB; // segment of requests up to kMinLargeAlloc; the
                                            // granule an expandable segment maps in the large pool
constexpr int64_t kMinLargeAlloc = 10 * kMiB;
constexpr int64_t kRoundLarge = 2 * kMiB;

int64_t RoundUp(int64_t bytes, int64_t granule) { return (bytes + granule - 1) / granule * granule; }

}  // namespace

int64_t RoundedRequest(int64_t bytes) { return bytes < kMinBlockSize ? kMinBlockSize : RoundUp(bytes, kMinBlockSize); }

int64_t SegmentSizeFor(int64_t bytes) {
  if (bytes <= kSmallSize) return kSmallBuffer;
  if (bytes < kMinLargeAlloc) return kLargeBuffer;
  return RoundUp(bytes, kRoundLarge);
}

// get_free_block: the free blocks of the pool ordered by (size, address); lower_bound on the size.
int CachingAllocatorReplay::FindFree(int64_t size) const {
  int best = -1;
  for (int i = 0; i < static_cast<int>(blocks_.size()); ++i) {
    const Block& b = blocks_[static_cast<size_t>(i)];
    if (b.owner >= 0 || b.size < size) continue;
    if (best < 0 || b.size < blocks_[static_cast<size_t>(best)].size) best = i;
  }
  return best;
}

int CachingAllocatorReplay::NewSegment(int64_t size) {
  const int64_t bytes = SegmentSizeFor(size);
  blocks_.push_back(Block{segments_++, 0, bytes, -1});
  reserved_ += bytes;
  return static_cast<int>(blocks_.size()) - 1;
}

// An expandable segment grows at its end by whole granules; a free block at its end becomes the
// start of the new block, so only what it lacks is mapped.
int CachingAllocatorReplay::GrowExpandable(int64_t size) {
  if (blocks_.empty()) {
    blocks_.push_back(Block{0, 0, 0, -1});
    segments_ = 1;
  }
  Block& tail = blocks_.back();
  const int64_t end = tail.offset + tail.size;
  int64_t free_tail = tail.owner < 0 ? tail.size : 0;
  const int64_t mapped = RoundUp(size - free_tail, kLargeBuffer);
  reserved_ += mapped;
  if (tail.owner < 0) {
    tail.size += mapped;
  } else {
    blocks_.push_back(Block{0, end, mapped, -1});
  }
  return static_cast<int>(blocks_.size()) - 1;
}

// should_split: a large-pool block splits when more than kSmallSize would be left; in an
// expandable segment whenever at least kMinBlockSize would.
void CachingAllocatorReplay::Take(int index, int id, int64_t size) {
  Block& b = blocks_[static_cast<size_t>(index)];
  const int64_t rest_bytes = b.size - size;
  if (expandable_ ? rest_bytes >= kMinBlockSize : rest_bytes > kSmallSize) {
    const Block rest{b.segment, b.offset + size, b.size - size, -1};
    b.size = size;
    blocks_.insert(blocks_.begin() + index + 1, rest);
  }
  Block& taken = blocks_[static_cast<size_t>(index)];
  taken.owner = id;
  allocated_ += taken.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

void CachingAllocatorReplay::Allocate(int id, int64_t bytes) {
  const int64_t size = RoundedRequest(bytes);
  int index = FindFree(size);
  if (index < 0) index = expandable_ ? GrowExpandable(size) : NewSegment(size);
  Take(index, id, size);
}

// free_block -> try_merge_blocks: a freed block merges with free neighbours of its segment.
void CachingAllocatorReplay::MergeAround(int index) {
  auto mergeable = [&](int a, int b) {
    if (a < 0 || b >= static_cast<int>(blocks_.size())) return false;
    const Block& x = blocks_[static_cast<size_t>(a)];
    const Block& y = blocks_[static_cast<size_t>(b)];
    return x.owner < 0 && y.owner < 0 && x.segment == y.segment && x.offset + x.size == y.offset;
  };
  if (mergeable(index, index + 1)) {
    blocks_[static_cast<size_t>(index)].size += blocks_[static_cast<size_t>(index) + 1].size;
    blocks_.erase(blocks_.begin() + index + 1);
  }
  if (mergeable(index - 1, index)) {
    blocks_[static_cast<size_t>(index) - 1].size += blocks_[static_cast<size_t>(index)].size;
    blocks_.erase(blocks_.begin() + index);
  }
}

void CachingAllocatorReplay::Free(int id) {
  for (int i = 0; i < static_cast<int>(blocks_.size()); ++i) {
    Block& b = blocks_[static_cast<size_t>(i)];
    if (b.owner != id) continue;
    b.owner = -1;
    allocated_ -= b.size;
    MergeAround(i);
    return;
  }
}

void CachingAllocatorReplay::Run(const std::vector<AllocatorEvent>& events) {
  for (const AllocatorEvent& e : events) {
    if (e.bytes > 0) {
      Allocate(e.id, e.bytes);
    } else {
      Free(e.id);
    }
  }
}

void CachingAllocatorReplay::ResetPeaks() {
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

}  // namespace dsp::sim
