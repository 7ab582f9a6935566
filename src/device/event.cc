#include "device/event.h"

#include <memory>

#include "device/stream.h"

namespace trnccl::device {

uint64_t Event::record(Stream& stream) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++generation_;
  }
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

uint64_t Event::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

void Event::complete(uint64_t generation, Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Records on different streams may complete out of order; a later one wins.
    if (generation <= completed_) return;
    completed_ = generation;
    stamp_ = Clock::now();
    failure_ = std::move(status);
  }
  completedCv_.notify_all();
}

Status Event::waitFor(uint64_t generation) {
  std::unique_lock<std::mutex> lock(mutex_);
  completedCv_.wait(lock, [&] { return completed_ >= generation; });
  return failure_;
}

Status Event::query() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_ < generation_) return Status(Code::kInProgress, "event not yet complete");
  return failure_;
}

Result<Event::Clock::time_point> Event::timestamp() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation_ == 0) return invalidArgument("event was never recorded");
  if (completed_ < generation_) return Status(Code::kInProgress, "event not yet complete");
  if (!failure_.isOk()) return failure_;
  return stamp_;
}

}  // namespace trnccl::device
