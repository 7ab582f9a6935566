#include "device/event.h"

#include <memory>

#include "common/sleeper.h"
#include "device/stream.h"

namespace trnccl::device {

// Sleeps are bounded like every wait in trnccl; a wake-up is normally a ring.
constexpr auto kMaxSleep = std::chrono::milliseconds(100);

uint64_t Event::record(Stream& stream) {
  const uint64_t generation = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  std::shared_ptr<Event> self = shared_from_this();
  stream.enqueue(
      [self, generation] {
        self->complete(generation, Status::ok());
        return Status::ok();
      },
      [self, generation](const Status& error) {
        self->complete(generation, Status(error.code(),
                                          "event recorded on a failed stream: " + error.message()));
      });
  return generation;
}

void Event::complete(uint64_t generation, Status status) {
  {
    std::lock_guard<std::mutex> lock(completeMutex_);
    // Records on different streams may complete out of order; a later one wins.
    if (generation <= completed_.load(std::memory_order_relaxed)) return;
    stamp_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    failed_.store(!status.isOk(), std::memory_order_relaxed);
    if (!status.isOk()) failure_ = std::move(status);
    completed_.store(generation, std::memory_order_release);
  }
  wakeIfSleeping(bell_.word());
}

Status Event::outcome() const {
  if (!failed_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(completeMutex_);
  return failure_;
}

Status Event::waitFor(uint64_t generation) {
  sleepUntil(bell_, kMaxSleep,
             [&] { return completed_.load(std::memory_order_acquire) >= generation; });
  return outcome();
}

Status Event::query() const {
  if (completed_.load(std::memory_order_acquire) < generation()) {
    return Status(Code::kInProgress, "event not yet complete");
  }
  return outcome();
}

Result<Event::Clock::time_point> Event::timestamp() const {
  const uint64_t generation = this->generation();
  if (generation == 0) return invalidArgument("event was never recorded");
  if (completed_.load(std::memory_order_acquire) < generation) {
    return Status(Code::kInProgress, "event not yet complete");
  }
  Status failure = outcome();
  if (!failure.isOk()) return failure;
  return Clock::time_point(Clock::duration(stamp_.load(std::memory_order_relaxed)));
}

}  // namespace trnccl::device
