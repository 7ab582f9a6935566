#include "issuer.h"

#include <exception>
#include <string>

#include "errors.h"
#include "group.h"

namespace torch_trnccl {

void Issuer::defer(P2p op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (comm_ == nullptr) fail("the process group was destroyed");
  pending_.push_back(std::move(op));
}

void Issuer::flush() {
  Failed failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed = flushLocked();
  }
  failed.report();
}

void Issuer::close() {
  Failed failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed = flushLocked();
    comm_ = nullptr;
  }
  failed.report();
}

void Issuer::Failed::report() {
  for (const auto& work : works) work->failNow(message);
}

Issuer::Failed Issuer::flushLocked() {
  if (pending_.empty() || comm_ == nullptr) return {};
  std::vector<P2p> ops;
  ops.swap(pending_);
  try {
    inGroup(comm_, [&] {
      for (const P2p& op : ops) {
        const Buffer& b = op.buffer;
        if (b.count == 0) continue;
        if (op.send) {
          check(trncclSend(b.data, b.count, b.type, op.peer, comm_, stream_), comm_,
                "send: trncclSend");
        } else {
          check(trncclRecv(b.data, b.count, b.type, op.peer, comm_, stream_), comm_,
                "recv: trncclRecv");
        }
      }
    });
  } catch (const std::exception& e) {
    Failed failed{{}, e.what()};
    for (const P2p& op : ops) failed.works.push_back(op.work);
    return failed;
  }
  for (const P2p& op : ops) op.work->completeAfter(stream_);
  return {};
}

}  // namespace torch_trnccl
