// The c10d::Work of one trnccl operation, completed by its process group's stream.
//
// The operation's calls are enqueued on the stream, then a host callback
// (trnrtStreamAddCallback) that runs once they are done (on the stream's worker, or on the
// thread that waits), or with the stream's error once an earlier task failed. The callback
// completes the work and its future (with the output tensors, what DDP's comm hooks expect), or
// fails both with trnccl's message. No thread per operation, no polling. wait() without a timeout
// goes through the runtime: it synchronizes an event recorded after the callback
// (trnrtEventSynchronize), so the waiting thread runs the stream's pending tasks itself, the
// callback included (src/device/README.md: the waiter runs the work), instead of sleeping while the
// stream's worker runs them; the tasks are bounded by the communicator's timeout. wait(timeout)
// sleeps on the work's condition variable, bounded by the timeout.
//
// The work keeps every tensor the stream may still touch alive until the callback ran.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "trnccl/trnccl.h"
#include "trnccl/trnrt.h"

namespace torch_trnccl {

class Issuer;

class Work : public c10d::Work {
 public:
  // `bound` limits a wait() without timeout: the library's deadline plus a grace period, in
  // case the callback never comes (it always should).
  Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
       std::vector<at::Tensor> keepAlive, trncclComm_t comm, std::chrono::milliseconds bound);
  ~Work() override;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // Enqueues the completion callback on `stream`, after what the operation enqueued there, and
  // records the event wait() synchronizes.
  void completeAfter(trnrtStream_t stream);
  // For a deferred operation: wait(), isCompleted() and getFuture() first have it issued.
  void setIssuer(std::weak_ptr<Issuer> issuer) { issuer_ = std::move(issuer); }
  // Completes the work now, failed with `message` (it could not be issued).
  void failNow(const std::string& message);

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  static void onStreamDone(trnrtStream_t stream, trnrtError_t status, void* userData);
  void complete(std::exception_ptr error);
  void issueIfDeferred();

  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keepAlive_;  // inputs and scratch, released on completion
  trncclComm_t comm_;                  // outlives the stream's callbacks (Comm::~Comm)
  std::chrono::milliseconds bound_;
  const char* title_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::weak_ptr<Issuer> issuer_;
  // Recorded after the callback; null until completeAfter() (a deferred operation's issuer may
  // run on another thread than the waiter).
  std::atomic<trnrtEvent_t> event_{nullptr};
};

}  // namespace torch_trnccl
