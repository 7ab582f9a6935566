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
  const uint64_t sequence = stream.enqueue(
      [self, generation] {
        self->complete(generation, Status::ok());
        return Status::ok();
      },
      [self, generation](const Status& error) {
        self->complete(generation, Status(error.code(),
                                          "event recorded on a failed stream: " + error.message()));
      });
  std::lock_guard<std::mutex> lock(recordMutex_);
  // Records from several threads: the latest generation wins. One that already completed is
  // remembered too; synchronize() then returns before it looks at the stream.
  if (generation > recorded_.generation) recorded_ = {generation, &stream, sequence};
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
  std::lock_guard<std::mutex> lock(recordMutex_);
  if (generation >= recorded_.generation) recorded_.stream = nullptr;
}

Status Event::outcome() const {
  if (!failed_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(completeMutex_);
  return failure_;
}

void Event::kickRecorder(uint64_t generation) const {
  // A caller that waits after each of its enqueues may have left the record to itself
  // (Stream, "Deferred start"); whoever waits for the event here does not run that stream.
  std::lock_guard<std::mutex> lock(recordMutex_);
  if (recorded_.generation >= generation && recorded_.stream != nullptr) recorded_.stream->kick();
}

Status Event::waitFor(uint64_t generation) {
  if (completed_.load(std::memory_order_acquire) < generation) kickRecorder(generation);
  sleepUntil(bell_, kMaxSleep,
             [&] { return completed_.load(std::memory_order_acquire) >= generation; });
  return outcome();
}

Status Event::synchronize() {
  const uint64_t generation = this->generation();
  if (completed_.load(std::memory_order_acquire) >= generation) return outcome();
  Stream* stream = nullptr;
  uint64_t sequence = 0;
  {
    std::lock_guard<std::mutex> lock(recordMutex_);
    if (recorded_.generation == generation) {
      stream = recorded_.stream;
      sequence = recorded_.sequence;
    }
  }
  // The stream's sticky error is not the event's: a later task may have failed. The record
  // (or its skip) completed the event either way, which waitFor() reads.
  if (stream != nullptr) (void)stream->waitFor(sequence);
  return waitFor(generation);
}

Status Event::query() const {
  if (completed_.load(std::memory_order_acquire) < generation()) {
    kickRecorder(generation());
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
