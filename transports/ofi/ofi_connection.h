// A connection over libfabric: a handle on one Channel of a shared Endpoint. Every call takes
// the endpoint's lock and drives its completion queue first (endpoint.h), so any connection's
// polling moves every connection's data of that rank. A waiting executor sleeps on the
// doorbell, which the endpoint's waker rings (waker.h).
#pragma once

#include <memory>

#include "transports/core/transport.h"
#include "transports/ofi/channel.h"
#include "transports/ofi/endpoint.h"

namespace trnccl::transport::ofi {

class OfiConnection final : public Connection {
 public:
  OfiConnection(std::shared_ptr<Endpoint> endpoint, Channel& channel)
      : endpoint_(std::move(endpoint)), channel_(channel) {}

  Status beginSend(uint64_t tag, size_t bytes) override;
  Result<size_t> sendSome(const void* src, size_t bytes) override;
  Result<bool> sendDone() override;
  Status beginRecv(uint64_t tag, size_t bytes) override;
  Result<size_t> recvSome(size_t max, const Consumer& consume) override;
  // Placed pieces (ChannelConfig::placeBytes) go straight to dst.
  Result<size_t> recvInto(std::byte* dst, size_t max) override;
  size_t bufferBytes() const override { return channel_.bufferBytes(); }
  // The channel's error, a failed heartbeat, or silence past the liveness timeout
  // (heartbeat.h); checkLink() the same, except that a peer that closed in order is not
  // checked there (only a peer this rank waits for must keep talking).
  Status checkPeer() override;
  Status checkLink() override;
  // Waiting (waker.h): no descriptors (the executor sleeps on the doorbell); before it does,
  // the endpoint's waker watches the completion queue's descriptor for it, once, or at every
  // arrival while a large message is in flight.
  void armDoorbell() override;
  int peer() const override { return channel_.peer(); }
  const char* transportName() const override { return "ofi"; }
  // The endpoint this connection is a channel of (tests hold its locks to stall a rank).
  Endpoint& endpoint() const { return *endpoint_; }
  // The largest message that travels inside its header (wire.h), agreed with the peer.
  size_t inlineBytes() const { return channel_.inlineBytes(); }

 private:
  std::shared_ptr<Endpoint> endpoint_;
  Channel& channel_;  // owned by endpoint_
};

}  // namespace trnccl::transport::ofi
