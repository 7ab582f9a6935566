// What a process group enqueues on its stream: one caller at a time, in program order, and
// the point-to-point operations it defers.
//
// Why defer: a group's operations run in order on its one stream, and trnccl sends of large
// pieces wait for their receiver. Issued one by one, two ranks that each isend to the other
// before their irecv (exchanges, rings, pipeline stages) would both block in the send until
// the timeout. So isend/irecv are held here and issued together as one trnccl group, in which
// no order can deadlock, as soon as the program waits on one of them (wait, is_completed,
// get_future), issues any other operation on the group, or destroys it. Messages between two
// ranks still match in the order they were posted.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "errors.h"
#include "tensors.h"
#include "trnccl/trnccl.h"
#include "work.h"

namespace torch_trnccl {

class Issuer {
 public:
  Issuer(trncclComm_t comm, trnrtStream_t stream) : comm_(comm), stream_(stream) {}

  // Issues the deferred operations, then calls issue(comm, stream), which enqueues on the
  // stream (and may throw).
  template <typename Issue>
  void issue(Issue issue) {
    Failed failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (comm_ == nullptr) fail("the process group was destroyed");
      failed = flushLocked();
      issue(comm_, stream_);
    }
    failed.report();
  }

  // A send or receive whose work completes once it has run.
  struct P2p {
    bool send;
    Buffer buffer;
    int peer;
    c10::intrusive_ptr<Work> work;
  };
  void defer(P2p op);
  // Issues the deferred operations as one group (their works fail if that fails).
  void flush();
  // Flushes, then refuses everything: the communicator is about to go.
  void close();

 private:
  // Deferred works whose group failed; failed outside the lock, since completing a work runs
  // its future's callbacks, which may issue more.
  struct Failed {
    std::vector<c10::intrusive_ptr<Work>> works;
    std::string message;
    void report();
  };
  Failed flushLocked();

  std::mutex mu_;
  std::vector<P2p> pending_;
  trncclComm_t comm_;
  trnrtStream_t stream_;
};

}  // namespace torch_trnccl
