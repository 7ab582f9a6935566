#include "device/stream.h"

#include <exception>
#include <utility>

#include "common/log.h"
#include "common/wait.h"
#include "device/device.h"

namespace trnccl::device {
namespace {

thread_local Stream* tlsCurrentStream = nullptr;

}  // namespace

Stream::Stream(int device) : device_(device), worker_([this] { workerLoop(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  workReady_.notify_one();
  worker_.join();
}

Stream* Stream::current() { return tlsCurrentStream; }

template <typename Done>
bool Stream::pollBriefly(Done done) {
  Backoff backoff;
  while (!done()) {
    if (!backoff.next()) return false;
  }
  return true;
}

uint64_t Stream::enqueue(Task task, SkipHandler onSkip) {
  uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sequence = enqueued_++;
    queue_.push_back(Work{std::move(task), std::move(onSkip)});
  }
  workReady_.notify_one();
  return sequence;
}

Status Stream::synchronize() {
  const uint64_t target = enqueued_.load();
  pollBriefly([&] { return completed_.load() >= target; });
  std::unique_lock<std::mutex> lock(mutex_);
  progress_.wait(lock, [&] { return completed_ >= target; });
  return error_;
}

Status Stream::waitFor(uint64_t sequence) {
  pollBriefly([&] { return completed_.load() > sequence; });
  std::unique_lock<std::mutex> lock(mutex_);
  progress_.wait(lock, [&] { return completed_ > sequence; });
  return error_;
}

Status Stream::query() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.isOk()) return error_;
  if (completed_ < enqueued_) return Status(Code::kInProgress, "stream has pending work");
  return Status::ok();
}

void Stream::workerLoop() {
  tlsCurrentStream = this;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (queue_.empty() && !stopping_) {
      // Idle: enqueued_ == completed_ until a task arrives (or the stream stops).
      const uint64_t idleAt = completed_.load();
      lock.unlock();
      pollBriefly([&] { return enqueued_.load() != idleAt; });
      lock.lock();
    }
    workReady_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and drained
    Work work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    runOne(work);
    work = Work{};  // destroy the task's captures outside the lock
    lock.lock();
    ++completed_;
    progress_.notify_all();
  }
}

void Stream::runOne(Work& work) {
  // Only this thread writes error_ (under the lock, for other threads' reads): no lock here.
  if (!error_.isOk()) {
    if (work.onSkip) work.onSkip(error_);
    return;
  }
  // Tasks see the stream's device as current, whatever an earlier task set.
  setCurrentDevice(device_);
  Status status;
  try {
    status = work.task();
  } catch (const std::exception& e) {
    status = internalError("task on a stream of device {} threw: {}", device_, e.what());
  } catch (...) {
    status = internalError("task on a stream of device {} threw a non-exception", device_);
  }
  if (status.isOk()) return;
  TRN_WARN(kDevice, "device {}: stream task failed, stream now in error: {}", device_,
           status.message());
  std::lock_guard<std::mutex> lock(mutex_);
  error_ = std::move(status);
}

}  // namespace trnccl::device
