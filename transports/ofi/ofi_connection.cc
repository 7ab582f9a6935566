#include "transports/ofi/ofi_connection.h"

#include <mutex>

#include "transports/ofi/testing.h"
#include "transports/ofi/waker.h"

namespace trnccl::transport::ofi {

Status OfiConnection::beginSend(uint64_t tag, size_t bytes) {
  std::lock_guard lock(endpoint_->mutex());
  return channel_.beginSend(tag, bytes);
}

Result<size_t> OfiConnection::sendSome(const void* src, size_t bytes) {
  std::lock_guard lock(endpoint_->mutex());
  // Completions first when they free the room the message needs; a message that fits a free
  // header slot goes without reading the queue (every read polls the provider's sockets).
  if (!channel_.roomToSend()) TRN_TRY(endpoint_->progress());
  return channel_.sendSome(src, bytes);
}

Result<bool> OfiConnection::sendDone() {
  std::lock_guard lock(endpoint_->mutex());
  // Already done (an injected message, or completions another call read): no queue read.
  Result<bool> done = channel_.sendDone();
  if (!done || *done) return done;
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

Result<size_t> OfiConnection::recvInto(std::byte* dst, size_t max) {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());
  return channel_.recvInto(dst, max);
}

Status OfiConnection::checkPeer() {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());
  return endpoint_->linkStatus(channel_, true);
}

Status OfiConnection::checkLink() {
  std::lock_guard lock(endpoint_->mutex());
  TRN_TRY(endpoint_->progress());
  return endpoint_->linkStatus(channel_, false);
}

void OfiConnection::armDoorbell() {
  Waker* waker = endpoint_->waker();
  if (waker == nullptr) return;
  std::lock_guard lock(endpoint_->mutex());
  const bool bulk = endpoint_->bulk();
  waker->watch(bulk ? Waker::Mode::kContinuous : Waker::Mode::kOnce);
  testing::counters().add(bulk ? testing::Event::kBulkDoorbellWaits
                               : testing::Event::kDoorbellWaits);
  if (!endpoint_->tryWait()) {
    // News pending: the sleep must not start, and a kOnce watch must not outlive it (it would
    // ring at the next arrival while nobody sleeps).
    if (!bulk) waker->watch(Waker::Mode::kIdle);
    waker->ring();
  }
}

}  // namespace trnccl::transport::ofi
