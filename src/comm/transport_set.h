// The transports of one communicator and the connection chosen for each peer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/core/transport.h"

namespace trnccl::comm {

class TransportSet {
 public:
  // Collective: for each peer, the first transport in `order` ("shm,ofi,tcp") that is built and
  // canConnect() wins; then every transport connects its peers, in order, on every rank.
  static Result<std::unique_ptr<TransportSet>> connect(transport::SetupContext& ctx,
                                                       const std::string& order);

  transport::Connection* connection(int peer) const { return conns_[peer].get(); }
  std::vector<transport::Connection*> connections() const;
  // The smallest buffer of any connection (the pipeline slice is derived from it).
  size_t minBufferBytes() const;

 private:
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  std::vector<std::unique_ptr<transport::Connection>> conns_;  // by rank; null for self
};

}  // namespace trnccl::comm
