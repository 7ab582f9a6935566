#include "common/sleeper.h"

#include <atomic>

namespace trnccl {

void wakeIfSleeping(DoorbellWord* word) {
  // Orders this thread's earlier stores (the work) before the load of `sleepers`; pairs with
  // the fence after the sleeper's announcement.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (word->sleepers.load(std::memory_order_relaxed) != 0) Doorbell::ring(word);
}

DoorbellSleeper::DoorbellSleeper(Doorbell& bell) : bell_(bell), word_(bell.word()) {
  word_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  // The caller's last check for work is ordered after the announcement.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

DoorbellSleeper::~DoorbellSleeper() { word_->sleepers.fetch_sub(1, std::memory_order_seq_cst); }

void DoorbellSleeper::sleep(uint32_t seen, std::chrono::microseconds max) {
  // Doorbell::sleep announces once more for its futex wait: harmless, and one copy of the wait.
  bell_.sleep(seen, max);
}

}  // namespace trnccl
