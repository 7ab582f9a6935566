// Where a buffer lives when it is emulated device memory: what a same-host peer needs to map it
// (/proc/<pid>/fd/<fd>) and read it in place (the emulated NeuronLink DMA), and what a NIC
// registration cache keys on. The device layer answers (device::locate); transports are handed
// that answer as a MemoryLocator, so they never depend on the device runtime.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>

namespace trnccl {

struct MemoryLocation {
  int device = -1;
  pid_t pid = 0;
  int arenaFd = -1;       // memfd backing the device's HBM arena
  size_t arenaBytes = 0;  // size of the arena mapping
  size_t offset = 0;      // offset of the pointer inside the arena
};

// std::nullopt for memory that is not device memory of this process.
using MemoryLocator = std::function<std::optional<MemoryLocation>(const void* ptr)>;

}  // namespace trnccl
