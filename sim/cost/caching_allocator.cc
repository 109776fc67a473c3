// SPDX-License-Identifier: Apache-2.0
#include "sim/cost/caching_allocator.h"

#include <algorithm>
#include <limits>

namespace dsp::sim {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kMinBlockSize = 512;      // round_size's granule
constexpr int64_t kSmallSize = 1 * kMiB;    // largest "small" request; should_split's threshold
constexpr int64_t kSmallBuffer = 2 * kMiB;  // segment of small requests; small expandable page
constexpr int64_t kLargeBuffer = 20 * kMiB; // segment of requests up to kMinLargeAlloc; large
                                            // expandable page
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

// The last block of an expandable segment: unmapped address space follows it.
bool CachingAllocatorReplay::AtGrowableEnd(int index) const {
  const Block& b = blocks_[static_cast<size_t>(index)];
  if (!expandable_ || b.segment != expandable_segment_[b.small ? 1 : 0]) return false;
  const size_t next = static_cast<size_t>(index) + 1;
  return next == blocks_.size() || blocks_[next].segment != b.segment;
}

// get_free_block: the pool's free blocks ordered by (size, address), lower_bound on the size; an
// expandable block counts as its size plus the unmapped space after it (expandable_size).
int CachingAllocatorReplay::FindFree(int64_t size, bool small) const {
  int best = -1;
  int64_t best_size = 0;
  for (int i = 0; i < static_cast<int>(blocks_.size()); ++i) {
    const Block& b = blocks_[static_cast<size_t>(i)];
    if (b.owner >= 0 || b.small != small || b.size < size) continue;
    const int64_t effective = AtGrowableEnd(i) ? std::numeric_limits<int64_t>::max() : b.size;
    if (best < 0 || effective < best_size) best = i, best_size = effective;
  }
  return best;
}

int CachingAllocatorReplay::NewSegment(int64_t size, bool small) {
  const int64_t bytes = SegmentSizeFor(size);
  blocks_.push_back(Block{segments_++, small, 0, bytes, -1});
  reserved_ += bytes;
  return static_cast<int>(blocks_.size()) - 1;
}

// An expandable segment grows at its end by whole pages; a free block at its end becomes the start
// of the new block, so only what it lacks is mapped (find_expandable_block, map_block).
int CachingAllocatorReplay::GrowExpandable(int64_t size, bool small) {
  int& segment = expandable_segment_[small ? 1 : 0];
  if (segment < 0) {
    segment = segments_++;
    blocks_.push_back(Block{segment, small, 0, 0, -1});
  }
  int tail = -1;
  for (int i = 0; i < static_cast<int>(blocks_.size()); ++i) {
    if (blocks_[static_cast<size_t>(i)].segment == segment) tail = i;
  }
  Block& end = blocks_[static_cast<size_t>(tail)];
  const int64_t free_tail = end.owner < 0 ? end.size : 0;
  const int64_t mapped = RoundUp(size - free_tail, small ? kSmallBuffer : kLargeBuffer);
  reserved_ += mapped;
  if (end.owner < 0) {
    end.size += mapped;
    return tail;
  }
  blocks_.insert(blocks_.begin() + tail + 1, Block{segment, small, end.offset + end.size, mapped, -1});
  return tail + 1;
}

// should_split: a large block splits when more than kSmallSize would be left; a small block, or any
// block of an expandable segment, whenever at least kMinBlockSize would.
void CachingAllocatorReplay::Take(int index, int id, int64_t size) {
  Block& b = blocks_[static_cast<size_t>(index)];
  const int64_t rest_bytes = b.size - size;
  if (expandable_ || b.small ? rest_bytes >= kMinBlockSize : rest_bytes > kSmallSize) {
    const Block rest{b.segment, b.small, b.offset + size, rest_bytes, -1};
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
  const bool small = size <= kSmallSize;
  int index = FindFree(size, small);
  if (index < 0) index = expandable_ ? GrowExpandable(size, small) : NewSegment(size, small);
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
