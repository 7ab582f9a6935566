// Test hooks of the shm transport: counters of the paths taken and a callback at segment
// creation. Cheap enough to stay in production builds (relaxed atomic increments).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace trnccl::transport::shm::testing {

// Counted by the receiver, per process.
struct Counters {
  std::atomic<uint64_t> inlineRecords{0};       // payload copied through a FIFO
  std::atomic<uint64_t> pointerDescriptors{0};  // same-process zero-copy
  std::atomic<uint64_t> arenaDescriptors{0};    // device arena mapped from a peer process
  std::atomic<uint64_t> cmaDescriptors{0};      // process_vm_readv from a peer process
};
Counters& counters();

// Called right after a segment was created and allocated, before it is shared or unlinked.
using SegmentHook = std::function<void(int fd, const std::string& name)>;
void setSegmentCreatedHook(SegmentHook hook);
void runSegmentCreatedHook(int fd, const std::string& name);

}  // namespace trnccl::transport::shm::testing
