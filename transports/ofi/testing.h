// Test hooks of the ofi transport: counters of the send paths taken and of the registration
// cache (mr_cache.h), so tests can tell a zero-copy send with a cached registration from a
// copy through the bounce ring when both deliver the same bytes. Per process, summed over
// every endpoint; cheap enough to stay in production builds (relaxed atomic increments).
#pragma once

#include <atomic>
#include <cstdint>

namespace trnccl::transport::ofi::testing {

struct Counters {
  std::atomic<uint64_t> zeroCopyPieces{0};    // data pieces posted from the caller's buffer
  std::atomic<uint64_t> copiedPieces{0};      // data pieces copied through the bounce ring
  std::atomic<uint64_t> registrations{0};     // windows an MrCache registered (its misses)
  std::atomic<uint64_t> cacheHits{0};         // lookups an existing registration covered
  std::atomic<uint64_t> evictions{0};         // registrations closed to make room
  std::atomic<int64_t> liveRegistrations{0};  // cached registrations open right now
};
Counters& counters();

}  // namespace trnccl::transport::ofi::testing
