#include "transports/ofi/mr_cache.h"

#include <algorithm>
#include <optional>

#include "common/log.h"
#include "transports/ofi/buffer.h"
#include "transports/ofi/testing.h"

namespace trnccl::transport::ofi {

MrCache::MrCache(fid_domain* domain, MemoryLocator locate)
    : domain_(domain), locate_(std::move(locate)) {}

MrCache::~MrCache() {
  // The entries close as entries_ is destroyed. Pins left by sends that never completed do
  // not matter any more: the endpoint, the only user of the descriptors, closed first.
  testing::counters().add(testing::Event::kLiveRegistrations,
                          -static_cast<int64_t>(entries_.size()));
}

Result<MrCache::Lease> MrCache::descriptor(const void* buf, size_t len,
                                           const RegisteredMemory* registered) {
  if (len == 0) return Lease{};
  auto* begin = static_cast<std::byte*>(const_cast<void*>(buf));
  std::byte* end = begin + len;
  Result<Entry*> entry = static_cast<Entry*>(nullptr);
  std::optional<MemoryLocation> where = locate_ ? locate_(buf) : std::nullopt;
  if (where && len <= where->arenaBytes - where->offset) {
    entry = deviceEntry(begin, end, *where);
  } else if (registered != nullptr) {
    // Other host memory (or a range running past the arena) is never registered: see the header.
    if (std::optional<RegisteredMemory::Hit> hit = registered->find(buf, len)) {
      entry = registeredEntry(*hit);
    }
  }
  if (!entry) return entry.status();
  if (*entry == nullptr) return Lease{};  // not cacheable, or everything pinned: copy
  ++(*entry)->pins;
  return Lease{(*entry)->desc, *entry};
}

Result<MrCache::Entry*> MrCache::deviceEntry(std::byte* begin, std::byte* end,
                                             const MemoryLocation& where) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->registration == 0 && it->begin <= begin && end <= it->end) {
      entries_.splice(entries_.begin(), entries_, it);  // now the most recently used
      testing::counters().add(testing::Event::kCacheHits);
      return &entries_.front();
    }
  }
  // Everything pinned: copying this piece beats growing past the bound or waiting.
  if (entries_.size() >= kMaxEntries && !evictOne()) return static_cast<Entry*>(nullptr);
  // Whole aligned windows, clipped to the arena: the arena's base need not be aligned.
  auto arenaBegin = reinterpret_cast<uintptr_t>(begin) - where.offset;
  uintptr_t arenaEnd = arenaBegin + where.arenaBytes;
  uintptr_t low = reinterpret_cast<uintptr_t>(begin) / kWindowBytes * kWindowBytes;
  uintptr_t high =
      (reinterpret_cast<uintptr_t>(end) + kWindowBytes - 1) / kWindowBytes * kWindowBytes;
  low = std::max(low, arenaBegin);
  high = std::min(high, arenaEnd);
  return add(reinterpret_cast<std::byte*>(low), reinterpret_cast<std::byte*>(high), 0);
}

Result<MrCache::Entry*> MrCache::registeredEntry(const RegisteredMemory::Hit& hit) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->registration == hit.id) {
      entries_.splice(entries_.begin(), entries_, it);
      testing::counters().add(testing::Event::kCacheHits);
      return &entries_.front();
    }
  }
  if (entries_.size() >= kMaxEntries && !evictOne()) return static_cast<Entry*>(nullptr);
  auto* begin = const_cast<std::byte*>(hit.range.begin);
  return add(begin, begin + hit.range.bytes, hit.id);
}

void MrCache::dropDeregistered(const RegisteredMemory& registered) {
  const uint64_t removals = registered.removals();
  if (removals == removalsSeen_) return;
  removalsSeen_ = removals;
  for (auto it = entries_.begin(); it != entries_.end();) {
    // A pinned entry of a removed range would be a send still reading it: the user broke the
    // contract; it goes once its send completes (a later sweep).
    if (it->registration != 0 && it->pins == 0 && !registered.contains(it->registration)) {
      it = entries_.erase(it);
      testing::counters().add(testing::Event::kEvictions);
      testing::counters().add(testing::Event::kLiveRegistrations, -1);
    } else {
      ++it;
    }
  }
}

void MrCache::release(Entry* entry) {
  if (entry != nullptr && entry->pins > 0) --entry->pins;
}

Result<MrCache::Entry*> MrCache::add(std::byte* begin, std::byte* end, uint64_t registration) {
  auto bytes = static_cast<size_t>(end - begin);
  fid_mr* mr = nullptr;
  int rc = fi_mr_reg(domain_, begin, bytes, FI_SEND | FI_RECV, 0, nextMrKey(), 0, &mr, nullptr);
  if (rc != 0) {
    return Status(Code::kSystemError,
                  fmt::format("ofi: registering {} bytes of {} memory at {}: {}", bytes,
                              registration != 0 ? "registered host" : "device",
                              static_cast<void*>(begin), fiError("fi_mr_reg", rc)));
  }
  Entry& entry = entries_.emplace_front();
  entry.begin = begin;
  entry.end = end;
  entry.mr.reset(mr);
  entry.desc = fi_mr_desc(mr);
  entry.registration = registration;
  testing::counters().add(testing::Event::kRegistrations);
  testing::counters().add(testing::Event::kLiveRegistrations);
  TRN_TRACE(kNet, "ofi: registered {} memory [{}, +{}) ({} cached)",
            registration != 0 ? "host" : "device", static_cast<void*>(begin), bytes,
            entries_.size());
  return &entry;
}

bool MrCache::evictOne() {
  for (auto it = entries_.end(); it != entries_.begin();) {
    --it;  // from the least recently used
    if (it->pins != 0) continue;
    entries_.erase(it);  // closes the registration
    testing::counters().add(testing::Event::kEvictions);
    testing::counters().add(testing::Event::kLiveRegistrations, -1);
    return true;
  }
  return false;
}

}  // namespace trnccl::transport::ofi
