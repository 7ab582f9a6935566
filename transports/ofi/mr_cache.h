// Memory registrations for zero-copy sends on providers that need local registration
// (FI_MR_LOCAL, e.g. efa; TRNCCL_OFI_MR_LOCAL=1 pretends so for any provider): fi_tsend then
// wants the descriptor of a registration covering the bytes, and registering per send would
// cost more than the copy it saves. One cache per Endpoint, used under the endpoint's lock.
//
// What is cached: only emulated device memory of this process (the MemoryLocator). A device's
// HBM arena is a memfd mapping that lives as long as the process and is never unmapped or
// hole-punched, so a registration of an arena range never goes stale, not even after
// trnrtFree: entries need no invalidation. Host memory can be unmapped and its addresses reused
// behind our back (a stale registration would send the wrong pages), so it is never
// registered here: the caller copies it through its registered bounce ring.
//
// Granularity: a miss registers the kWindowBytes-aligned window covering the bytes (clipped to
// the arena), so neighbouring buffers and the other pieces of a message hit the same entry.
// Windows of different misses may overlap (a piece straddling a boundary gets a wider one);
// a lookup takes any entry that covers the bytes.
//
// Bound and eviction: at most kMaxEntries registrations. Every lookup pins its entry until
// the caller releases it (the send completed or failed), since the provider may read through
// the registration until then. A miss with the cache full closes the least recently used
// entry that nothing pins; when every entry is pinned, the lookup returns no lease and the
// caller copies instead, so the bound holds without ever waiting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>

#include "common/memory_location.h"
#include "common/status.h"
#include "transports/ofi/fid.h"

namespace trnccl::transport::ofi {

class MrCache {
 public:
  static constexpr size_t kWindowBytes = size_t{2} << 20;
  static constexpr size_t kMaxEntries = 64;

  // One registered window (owned by the cache; callers hold it only inside a Lease).
  struct Entry {
    std::byte* begin = nullptr;
    std::byte* end = nullptr;
    MrPtr mr{nullptr, {"cached memory registration"}};
    void* desc = nullptr;
    uint32_t pins = 0;  // sends posted through it whose completion has not arrived
  };
  // A registration pinned for one send: post with `desc`, then release(entry) once.
  // Empty (no entry): not cacheable, copy the bytes instead.
  struct Lease {
    void* desc = nullptr;
    Entry* entry = nullptr;
    explicit operator bool() const { return entry != nullptr; }
  };

  // `domain` must outlive the cache (the Endpoint declares the cache after its domain);
  // `locate` tells device memory (the only memory cached) from host memory.
  MrCache(fid_domain* domain, MemoryLocator locate);
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // The descriptor of a registration covering [buf, buf + len), registering its window on a
  // miss (FI_SEND | FI_RECV), pinned until release(). An error is fi_mr_reg's.
  Result<Lease> descriptor(const void* buf, size_t len);
  // Unpins a lease's entry; the entry stays cached.
  void release(Entry* entry);

  size_t size() const { return entries_.size(); }

 private:
  Result<Entry*> add(std::byte* begin, std::byte* end);
  bool evictOne();

  fid_domain* domain_;
  MemoryLocator locate_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace trnccl::transport::ofi
