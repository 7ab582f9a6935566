#include "transports/ofi/ofi_connection.h"

#include <mutex>

#include "transports/ofi/waker.h"

namespace trnccl::transport::ofi {

Status OfiConnection::beginSend(uint64_t tag, size_t bytes) {
  std::lock_guard lock(endpoint_->mutex());
  return channel_.beginSend(tag, bytes);
}

Result<size_t> OfiConnection::sendSome(const void* src, size_t bytes) {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());  // completions first: they free ring room
  return channel_.sendSome(src, bytes);
}

Result<bool> OfiConnection::sendDone() {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());
  return channel_.sendDone();
}

Status OfiConnection::beginRecv(uint64_t tag, size_t bytes) {
  std::lock_guard lock(endpoint_->mutex());
  return channel_.beginRecv(tag, bytes);
}

Result<size_t> OfiConnection::recvSome(size_t max, const Consumer& consume) {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());
  return channel_.recvSome(max, consume);
}

Status OfiConnection::checkPeer() {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());
  channel_.tick(Clock::now());  // the liveness check, at the executor's pace while it waits
  return channel_.error();
}

void OfiConnection::wakeFds(std::vector<int>& fds) const {
  Waker* waker = endpoint_->waker();
  if (waker == nullptr || waker->kickFd() < 0) return;
  {
    std::lock_guard lock(endpoint_->mutex());
    // News the descriptor may not show (completions queued, bytes read ahead): return at once.
    if (!endpoint_->tryWait()) waker->kick();
  }
  fds.push_back(waker->cqFd());
  fds.push_back(waker->kickFd());
}

void OfiConnection::woke() {
  if (Waker* waker = endpoint_->waker()) waker->clearKick();
}

void OfiConnection::armDoorbell() {
  Waker* waker = endpoint_->waker();
  if (waker == nullptr) return;
  std::lock_guard lock(endpoint_->mutex());
  if (endpoint_->tryWait()) {
    waker->arm();
  } else {
    waker->ring();  // news pending: the sleep must not start
  }
}

}  // namespace trnccl::transport::ofi
