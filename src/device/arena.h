// A device's HBM arena: a sparse memfd of the device's capacity, mapped shared, from which
// trnrtMalloc hands out blocks.
//
// Why a memfd: a peer process on the same host can open /proc/<pid>/fd/<fd> and map the very
// same pages, which is how the emulation models NeuronLink DMA between cores. ftruncate makes
// the file sparse, so an arena costs address space only until its pages are touched.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "device/allocator.h"

namespace trnccl::device {

class Arena {
 public:
  // Creates the memfd and maps `capacity` bytes of it.
  static Result<std::unique_ptr<Arena>> create(int device, size_t capacity);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // A block of at least `size` bytes (256-byte aligned), or kDeviceError with a message that
  // names the device, the request and the free space.
  Result<void*> allocate(size_t size);
  // kInvalidArgument when `ptr` is not the start of a live allocation of this arena.
  Status free(void* ptr);

  bool contains(const void* ptr) const {
    auto* p = static_cast<const std::byte*>(ptr);
    return p >= base_ && p < base_ + bytes_;
  }
  size_t offsetOf(const void* ptr) const { return static_cast<const std::byte*>(ptr) - base_; }
  std::byte* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  int fd() const { return fd_; }
  size_t freeBytes() const;

 private:
  Arena(int device, int fd, std::byte* base, size_t bytes);

  const int device_;
  const int fd_;
  std::byte* const base_;
  const size_t bytes_;
  mutable std::mutex mutex_;
  OffsetAllocator allocator_;  // guarded by mutex_
};

}  // namespace trnccl::device
