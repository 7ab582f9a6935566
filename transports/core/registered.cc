#include "transports/core/registered.h"

#include <mutex>

namespace trnccl::transport {

uint64_t RegisteredMemory::add(const void* p, size_t bytes) {
  std::unique_lock lock(mu_);
  const uint64_t id = nextId_++;
  ranges_[id] = Range{static_cast<const std::byte*>(p), bytes};
  live_.store(ranges_.size(), std::memory_order_relaxed);
  return id;
}

std::optional<RegisteredMemory::Range> RegisteredMemory::remove(uint64_t id) {
  std::unique_lock lock(mu_);
  auto it = ranges_.find(id);
  if (it == ranges_.end()) return std::nullopt;
  Range range = it->second;
  ranges_.erase(it);
  live_.store(ranges_.size(), std::memory_order_relaxed);
  removals_.fetch_add(1, std::memory_order_release);
  return range;
}

std::optional<RegisteredMemory::Hit> RegisteredMemory::find(const void* p, size_t bytes) const {
  if (live_.load(std::memory_order_relaxed) == 0) return std::nullopt;
  const auto* begin = static_cast<const std::byte*>(p);
  std::shared_lock lock(mu_);
  for (const auto& [id, range] : ranges_) {
    if (begin >= range.begin && bytes <= range.bytes &&
        static_cast<size_t>(begin - range.begin) <= range.bytes - bytes) {
      return Hit{id, range};
    }
  }
  return std::nullopt;
}

bool RegisteredMemory::contains(uint64_t id) const {
  std::shared_lock lock(mu_);
  return ranges_.count(id) != 0;
}

}  // namespace trnccl::transport
