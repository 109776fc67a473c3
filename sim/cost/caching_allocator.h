// SPDX-License-Identifier: Apache-2.0
// A replay of PyTorch's CUDA caching allocator for a sequence of tensors on one stream
// (c10/cuda/CUDACachingAllocator.cpp, torch 2.5-2.11). Freed memory stays cached, not returned to
// CUDA. Requests of at most 1 MiB come from a small pool, larger ones from a large pool. A request
// is served by one free block of its pool at least as large: the smallest (get_free_block), except
// that under expandable segments a free block at the end of the mapped range counts as the room it
// could grow to, so it is taken last. The block is split when more than 1 MiB would be left (large
// pool) or at least 512 B (small pool, expandable segments); otherwise a new segment is made. Free
// blocks merge with free neighbours of their segment only, so a free block never serves a larger
// request: memory "reserved" (torch.cuda.max_memory_reserved, torchtitan's memory monitor,
// nvidia-smi beside the CUDA context) can exceed memory "allocated" by the cached blocks too small
// for the requests made at the peak. docs/cost-model.md, "Reserved beyond allocated".
#pragma once

#include <cstdint>
#include <vector>

namespace dsp::sim {

/// One step of a replay: allocate `bytes` under `id` (bytes > 0), or free `id` (bytes == 0).
struct AllocatorEvent {
  int id = 0;
  int64_t bytes = 0;
};

class CachingAllocatorReplay {
 public:
  /// expandable_segments: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, one segment per pool that
  /// grows by mapping pages at its end (20 MiB in the large pool, 2 MiB in the small one) and takes
  /// in a free block there; otherwise every new segment is one cudaMalloc.
  explicit CachingAllocatorReplay(bool expandable_segments) : expandable_(expandable_segments) {}

  void Allocate(int id, int64_t bytes);
  void Free(int id);
  void Run(const std::vector<AllocatorEvent>& events);
  /// Starts the peaks again from what is allocated and reserved now (a second step's replay).
  void ResetPeaks();

  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak_allocated() const { return peak_allocated_; }
  int64_t peak_reserved() const { return peak_reserved_; }

 private:
  struct Block {
    int segment = 0;
    bool small = false;  // the pool
    int64_t offset = 0, size = 0;
    int owner = -1;  // the id holding it, -1 when free
  };
  bool AtGrowableEnd(int index) const;
  int FindFree(int64_t size, bool small) const;
  int NewSegment(int64_t size, bool small);
  int GrowExpandable(int64_t size, bool small);
  void Take(int index, int id, int64_t size);
  void MergeAround(int index);

  bool expandable_;
  std::vector<Block> blocks_;  // in (segment, offset) order
  int segments_ = 0;
  int expandable_segment_[2] = {-1, -1};  // large, small
  int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
};

/// The allocator's rounding (CUDACachingAllocator.cpp round_size): requests are multiples of 512 B.
int64_t RoundedRequest(int64_t bytes);

/// The size of a new segment for a request (get_allocation_size): 2 MiB for requests of at most
/// 1 MiB, 20 MiB up to 10 MiB, else the request rounded up to 2 MiB.
int64_t SegmentSizeFor(int64_t bytes);

}  // namespace dsp::sim
