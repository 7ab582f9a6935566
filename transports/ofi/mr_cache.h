// Memory registrations for zero-copy sends on providers that need local registration
// (FI_MR_LOCAL, e.g. efa; TRNCCL_OFI_MR_LOCAL=1 pretends so for any provider): fi_tsend then
// wants the descriptor of a registration covering the bytes, and registering per send would
// cost more than the copy it saves. One cache per Endpoint, used under the endpoint's lock.
//
// What is cached: emulated device memory of this process (the MemoryLocator), and host memory
// registered with the communicator (trncclCommRegister, transports/core/registered.h). A
// device's HBM arena is a memfd mapping that lives as long as the process and is never
// unmapped or hole-punched, so a registration of an arena range never goes stale, not even
// after trnrtFree: those entries need no invalidation. Other host memory can be unmapped and
// its addresses reused behind our back (a stale registration would send the wrong pages), so
// it is registered only while the user promises it stays: a registered range is registered
// whole on its first send, keyed by its registration id, and closed on the first lookup after
// that id was deregistered (RegisteredMemory::removals()). Unregistered host memory is never
// registered here: the caller copies it through its registered bounce ring.
//
// Granularity: a device-memory miss registers the kWindowBytes-aligned window covering the
// bytes (clipped to the arena), so neighbouring buffers and the other pieces of a message hit the
// same entry. Windows of different misses may overlap (a piece straddling a boundary gets a wider
// one); a lookup takes any entry that covers the bytes.
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
#include "transports/core/registered.h"
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
    uint32_t pins = 0;          // sends posted through it whose completion has not arrived
    uint64_t registration = 0;  // the registered host range's id; 0: a device window
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

  // The descriptor of a registration covering [buf, buf + len), registering its device window,
  // or the host range of `registered` that covers it, on a miss (FI_SEND | FI_RECV), pinned
  // until release(). An error is fi_mr_reg's. `registered` may be null (none).
  Result<Lease> descriptor(const void* buf, size_t len,
                           const RegisteredMemory* registered = nullptr);
  // Unpins a lease's entry; the entry stays cached.
  void release(Entry* entry);
  // Closes the unpinned entries of host ranges deregistered since the last call (one atomic
  // load when none were). Called before every zero-copy decision, so a deregistered range's
  // registration closes by the next send whatever that send's source.
  void dropDeregistered(const RegisteredMemory& registered);

  size_t size() const { return entries_.size(); }

 private:
  Result<Entry*> add(std::byte* begin, std::byte* end, uint64_t registration);
  Result<Entry*> deviceEntry(std::byte* begin, std::byte* end, const MemoryLocation& where);
  Result<Entry*> registeredEntry(const RegisteredMemory::Hit& hit);
  bool evictOne();

  fid_domain* domain_;
  MemoryLocator locate_;
  std::list<Entry> entries_;   // most recently used first
  uint64_t removalsSeen_ = 0;  // RegisteredMemory::removals() when last dropped
};

}  // namespace trnccl::transport::ofi
