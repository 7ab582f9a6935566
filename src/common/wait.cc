#include "common/wait.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>

namespace trnccl {
namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE: the word may live in a segment shared with other processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

std::chrono::microseconds Deadline::remaining() const {
  if (at_ == Clock::time_point::max()) return std::chrono::hours(24);
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(at_ - Clock::now());
  return std::clamp(left, std::chrono::microseconds(0),
                    std::chrono::microseconds(std::chrono::hours(24)));
}

void Doorbell::ring(DoorbellWord* word) {
  word->seq.fetch_add(1, std::memory_order_seq_cst);
  if (word->sleepers.load(std::memory_order_seq_cst) != 0) {
    futex(&word->seq, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

void Doorbell::sleep(uint32_t seen, std::chrono::microseconds max) {
  if (max.count() <= 0) return;
  timespec ts{static_cast<time_t>(max.count() / 1000000),
              static_cast<long>((max.count() % 1000000) * 1000)};
  // Announce the sleeper before re-checking the word, so a ring() after our snapshot either
  // changed seq (FUTEX_WAIT returns at once) or sees sleepers > 0 and wakes us.
  DoorbellWord* word = this->word();
  word->sleepers.fetch_add(1, std::memory_order_seq_cst);
  futex(&word->seq, FUTEX_WAIT, seen, &ts);
  word->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace trnccl
