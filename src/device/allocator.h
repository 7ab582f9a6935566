// First-fit allocator of offsets inside a fixed-size region (a device's HBM arena).
//
// Why offsets rather than pointers: the same arena is mapped at different addresses by peer
// processes, so the allocator reasons in offsets and the arena adds its base. Blocks are
// 256-byte aligned (what a DMA engine wants), free blocks are kept sorted by offset so that
// freeing coalesces with both neighbours in O(log n), and allocation is first fit, which keeps
// low offsets dense. Not thread-safe by itself: the arena serialises calls.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

namespace trnccl::device {

class OffsetAllocator {
 public:
  static constexpr size_t kAlignment = 256;

  explicit OffsetAllocator(size_t capacity);

  // The offset of a new block of at least `size` bytes, or nullopt when no free block is large
  // enough. A size of 0 gets a block of kAlignment bytes so every call returns a unique offset.
  std::optional<size_t> allocate(size_t size);
  // Returns false when `offset` is not the start of a live allocation.
  bool free(size_t offset);

  size_t capacity() const { return capacity_; }
  size_t freeBytes() const { return freeBytes_; }
  size_t largestFreeBlock() const;
  size_t freeBlockCount() const { return free_.size(); }
  // Bytes reserved for the allocation starting at `offset` (0 when there is none).
  size_t allocationSize(size_t offset) const;

 private:
  size_t capacity_;
  size_t freeBytes_;
  std::map<size_t, size_t> free_;  // offset -> size, disjoint and never adjacent
  std::map<size_t, size_t> used_;  // offset -> size
};

}  // namespace trnccl::device
