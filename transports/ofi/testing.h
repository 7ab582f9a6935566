// Test hooks of the ofi transport: counters of the send paths taken, of the registration
// cache (mr_cache.h) and of what an endpoint cancelled when it closed, so tests can tell a
// zero-copy send with a cached registration from a copy through the bounce ring when both deliver
// the same bytes. Per process, summed over every endpoint (transports/core/counters.h).
#pragma once

#include "transports/core/counters.h"

namespace trnccl::transport::ofi::testing {

enum class Event {
  kZeroCopyPieces,     // data pieces posted from the caller's buffer
  kCopiedPieces,       // data pieces copied through the bounce ring
  kRegisteredPieces,   // data pieces posted in place from a buffer registered with the comm
  kInlineMessages,     // messages sent inside their header message (wire.h kInline)
  kInjectedMessages,   // inline messages sent with fi_tinject (no send completion)
  kLeadingHeaders,     // headers sent at the start of a first piece with payload (kLeads)
  kRegistrations,      // windows an MrCache registered (its misses)
  kCacheHits,          // lookups an existing registration covered
  kEvictions,          // registrations closed to make room
  kLiveRegistrations,  // cached registrations open right now
  kReleasedAtClose,    // operations cancelled (or completed) while an endpoint closed
  kHeldAtClose,        // operations the provider still held when an endpoint closed
  kDoorbellWaits,      // waits on the doorbell with the waker armed once (kOnce)
  kBulkDoorbellWaits,  // waits on the doorbell with a large message in flight (kContinuous)
  kWakerRings,         // doorbell rings by the waker thread
  kCongestionSet,      // provider sockets given a congestion control (sockets.h)
  kReceivedInPlace,    // data pieces posted into a copying receiver's destination
  kCount
};
using Counters = transport::Counters<Event>;
inline Counters& counters() { return Counters::process(); }

}  // namespace trnccl::transport::ofi::testing
