// Test hooks of the shm transport: counters of the paths taken and a callback at segment
// creation. Cheap enough to stay in production builds (relaxed atomic increments).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "transports/core/counters.h"

namespace trnccl::transport::shm::testing {

// Counted by the receiver (kRegisteredPieces by the sender), per process
// (transports/core/counters.h).
enum class Event {
  kInlineRecords,       // payload copied through a FIFO
  kPointerDescriptors,  // same-process zero-copy
  kArenaDescriptors,    // device arena mapped from a peer process
  kCmaDescriptors,      // process_vm_readv from a peer process
  kRegisteredPieces,    // sent by descriptor only because registered (sender's count)
  kLlMessages,          // small messages by the LL protocol (ll.h)
  kCount
};
using Counters = transport::Counters<Event>;
inline Counters& counters() { return Counters::process(); }

// Called right after a segment was created and allocated, before it is shared or unlinked.
using SegmentHook = std::function<void(int fd, const std::string& name)>;
void setSegmentCreatedHook(SegmentHook hook);
void runSegmentCreatedHook(int fd, const std::string& name);

// The sequence number of the first LL message of segments created from now on (default 1), so
// a test reaches the wrap of the 32-bit sequence in a few messages. 0 restores the default.
void setLlFirstSeq(uint32_t seq);
uint32_t llFirstSeq();

}  // namespace trnccl::transport::shm::testing
