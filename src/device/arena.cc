#include "device/arena.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/fd_guard.h"
#include "common/log.h"

namespace trnccl::device {

Result<std::unique_ptr<Arena>> Arena::create(int device, size_t capacity) {
  if (capacity < OffsetAllocator::kAlignment) {
    return internalError("device {}: HBM capacity of {} bytes is below the minimum of {}", device,
                         capacity, OffsetAllocator::kAlignment);
  }
  std::string name = fmt::format("trnrt-hbm-{}", device);
  FdGuard fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (fd.get() < 0) {
    return systemError("device {}: memfd_create failed: {}", device, std::strerror(errno));
  }
  if (::ftruncate(fd.get(), static_cast<off_t>(capacity)) != 0) {
    return systemError("device {}: ftruncate of the HBM arena to {} bytes failed: {}", device,
                       capacity, std::strerror(errno));
  }
  void* base =
      ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd.get(), 0);
  if (base == MAP_FAILED) {
    return systemError("device {}: mmap of the {}-byte HBM arena failed: {}", device, capacity,
                       std::strerror(errno));
  }
  TRN_INFO(kDevice, "device {}: HBM arena of {} bytes at {} (memfd {})", device, capacity, base,
           fd.get());
  return std::unique_ptr<Arena>(
      new Arena(device, fd.release(), static_cast<std::byte*>(base), capacity));
}

Arena::Arena(int device, int fd, std::byte* base, size_t bytes)
    : device_(device), fd_(fd), base_(base), bytes_(bytes), allocator_(bytes) {}

Arena::~Arena() {
  ::munmap(base_, bytes_);
  ::close(fd_);
}

Result<void*> Arena::allocate(size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<size_t> offset = allocator_.allocate(size);
  if (!offset) {
    size_t freeBytes = allocator_.freeBytes();
    std::string fragmentation = freeBytes >= size ? fmt::format(" (largest free block {} bytes)",
                                                                allocator_.largestFreeBlock())
                                                  : std::string();
    return Status(Code::kDeviceError,
                  fmt::format("trnrtMalloc: out of device memory on device {}: requested {} "
                              "bytes, {} of {} free{}",
                              device_, size, freeBytes, allocator_.capacity(), fragmentation));
  }
  return static_cast<void*>(base_ + *offset);
}

Status Arena::free(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!contains(ptr) || !allocator_.free(offsetOf(ptr))) {
    return invalidArgument("trnrtFree: {} is not an allocation of device {}", ptr, device_);
  }
  return Status::ok();
}

size_t Arena::freeBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocator_.freeBytes();
}

}  // namespace trnccl::device
