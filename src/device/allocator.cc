#include "device/allocator.h"

#include <algorithm>
#include <iterator>

namespace trnccl::device {

OffsetAllocator::OffsetAllocator(size_t capacity)
    : capacity_(capacity / kAlignment * kAlignment), freeBytes_(capacity_) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

std::optional<size_t> OffsetAllocator::allocate(size_t size) {
  size = std::max<size_t>(size, 1);
  if (size > capacity_) return std::nullopt;  // also guards the rounding below from overflow
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < rounded) continue;
    size_t offset = it->first;
    size_t remaining = it->second - rounded;
    free_.erase(it);
    if (remaining > 0) free_.emplace(offset + rounded, remaining);
    used_.emplace(offset, rounded);
    freeBytes_ -= rounded;
    return offset;
  }
  return std::nullopt;
}

bool OffsetAllocator::free(size_t offset) {
  auto used = used_.find(offset);
  if (used == used_.end()) return false;
  size_t size = used->second;
  used_.erase(used);
  freeBytes_ += size;

  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return true;
    }
  }
  free_.emplace(offset, size);
  return true;
}

size_t OffsetAllocator::largestFreeBlock() const {
  size_t largest = 0;
  for (const auto& [offset, size] : free_) largest = std::max(largest, size);
  return largest;
}

size_t OffsetAllocator::allocationSize(size_t offset) const {
  auto it = used_.find(offset);
  return it == used_.end() ? 0 : it->second;
}

}  // namespace trnccl::device
