// An allocator for the engine's large arrays (every rank's steps: hundreds of MB at 2,048
// ranks): large blocks are mapped on 2 MiB boundaries and marked for transparent huge pages,
// because the engine reads them at thousands of places at once (each rank's next step), and
// with 4 KiB pages nearly every such read would also miss the TLB.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace trnccl::sim {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: converting, as allocators are

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    void* p =
        mmap(nullptr, rounded(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, rounded(bytes), MADV_HUGEPAGE);  // a hint: without THP it is plain memory
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      ::operator delete(p);
    } else {
      munmap(p, rounded(bytes));
    }
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }

 private:
  static size_t rounded(size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }
};

}  // namespace trnccl::sim
