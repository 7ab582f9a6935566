#include "work.h"

#include <ATen/core/jit_type.h>

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "errors.h"
#include "issuer.h"

namespace torch_trnccl {

Work::Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
           std::vector<at::Tensor> keepAlive, trncclComm_t comm, std::chrono::milliseconds bound)
    : c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      keepAlive_(std::move(keepAlive)),
      comm_(comm),
      bound_(bound),
      title_(title),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

Work::~Work() {
  // The runtime keeps a pending record's state alive: destroying the handle is safe.
  if (trnrtEvent_t event = event_.load(std::memory_order_acquire)) trnrtEventDestroy(event);
}

void Work::completeAfter(trnrtStream_t stream) {
  // The stream holds a reference until the callback has run.
  auto* self =
      new c10::intrusive_ptr<Work>(c10::intrusive_ptr<Work>::unsafe_reclaim_from_nonowning(this));
  trnrtError_t error = trnrtStreamAddCallback(stream, &Work::onStreamDone, self, 0);
  if (error != trnrtSuccess) {
    delete self;
    checkRt(error, "trnrtStreamAddCallback");
  }
  trnrtEvent_t event = nullptr;
  checkRt(trnrtEventCreate(&event), "trnrtEventCreate");
  error = trnrtEventRecord(event, stream);
  if (error != trnrtSuccess) {
    trnrtEventDestroy(event);
    checkRt(error, "trnrtEventRecord");
  }
  event_.store(event, std::memory_order_release);
}

void Work::onStreamDone(trnrtStream_t /*stream*/, trnrtError_t status, void* userData) {
  std::unique_ptr<c10::intrusive_ptr<Work>> self(static_cast<c10::intrusive_ptr<Work>*>(userData));
  try {
    Work& work = **self;
    std::exception_ptr error;
    if (status != trnrtSuccess) {
      error = std::make_exception_ptr(std::runtime_error(
          std::string(work.title_) + " failed: " + streamFailure(work.comm_, status)));
    }
    work.complete(error);
  } catch (...) {
    // A future callback that throws must not take the stream's worker down.
  }
}

void Work::failNow(const std::string& message) {
  complete(std::make_exception_ptr(std::runtime_error(message)));
}

void Work::complete(std::exception_ptr error) {
  finish(error);  // completes wait()/isCompleted() and wakes waiters
  keepAlive_.clear();
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

void Work::issueIfDeferred() {
  if (std::shared_ptr<Issuer> issuer = issuer_.lock()) issuer->flush();
}

bool Work::isCompleted() {
  issueIfDeferred();
  return c10d::Work::isCompleted();
}

bool Work::wait(std::chrono::milliseconds timeout) {
  issueIfDeferred();
  const bool bounded = timeout != kNoTimeout;
  if (trnrtEvent_t event = event_.load(std::memory_order_acquire); !bounded && event != nullptr) {
    // Runs the stream's tasks up to the callback here; a failure reaches us through the
    // callback, as exception_.
    (void)trnrtEventSynchronize(event);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, bounded ? timeout : bound_, [&] { return completed_; })) {
    fail(std::string(title_) + ": wait() timed out after " +
         std::to_string((bounded ? timeout : bound_).count()) + " ms" +
         (bounded ? "" : " (the process group's timeout plus a grace period)"));
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  issueIfDeferred();  // whoever asks for the future will wait on it
  return future_;
}

}  // namespace torch_trnccl
