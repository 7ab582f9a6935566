// ThreadSanitizer and FIFOs mapped twice in one process.
//
// Ranks that are threads of one process still map each other's segments separately, so one
// FIFO's control words have two addresses: the sender's release of `head` (through its mapping
// of the peer's segment) and the receiver's acquire (through the receiver's own mapping) look
// unrelated to TSan, which matches synchronisation by address. The data itself is harmless to
// TSan (also two addresses), but a zero-copy read of the sender's buffer then looks like a race
// with the sender's earlier writes. FifoSync repeats every release and acquire on one token
// address per FIFO, the same in both mappings. Without TSan it compiles to nothing.
//
// Order matters: released() goes *before* the release store it stands for, acquired() after the
// acquire load. The peer may see the store and act on it (read the buffer a descriptor names,
// or reuse a buffer whose acknowledgement it saw) before this thread runs its next instruction;
// a release annotated after the store then comes too late for TSan, which reports the peer's
// access as a race with ours (seen in 2 of 7 inproc.api runs under load, session 13).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define TRNCCL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRNCCL_TSAN 1
#endif
#endif

#ifdef TRNCCL_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace trnccl::transport::shm {

class FifoSync {
 public:
  // The FIFO of slot `slot` in rank `owner`'s segment of communicator `commHash`.
  FifoSync(uint64_t commHash, int owner, uint32_t slot) {
#ifdef TRNCCL_TSAN
    static char tokens[4096];  // distinct FIFOs may share a token: that only adds ordering
    uint64_t h = commHash ^ (uint64_t(uint32_t(owner)) << 32 | slot);
    h *= 0x9e3779b97f4a7c15ULL;
    token_ = &tokens[(h >> 52) % sizeof(tokens)];
#else
    (void)commHash, (void)owner, (void)slot;
#endif
  }
  // Just before a release store to one of the FIFO's control words.
  void released() const {
#ifdef TRNCCL_TSAN
    __tsan_release(token_);
#endif
  }
  // After an acquire load of one of them.
  void acquired() const {
#ifdef TRNCCL_TSAN
    __tsan_acquire(token_);
#endif
  }

 private:
#ifdef TRNCCL_TSAN
  char* token_ = nullptr;
#endif
};

}  // namespace trnccl::transport::shm
