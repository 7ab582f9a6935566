// The bootstrap root service: one per unique id, an asynchronous Asio server on its own thread.
//
// Why asynchronous: the root's port is reachable by anything on the network (port scanners, a
// mistyped HTTP client, a stalled peer). Each connection gets a handshake deadline and is read
// independently, so no single bad connection can keep the root from serving the real ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace trnccl::bootstrap {

class RootService {
 public:
  // Binds the listener (port 0: ephemeral; SO_REUSEADDR) but serves nothing until run().
  static Result<std::unique_ptr<RootService>> create(const std::string& host, uint16_t port,
                                                     uint64_t magic);
  ~RootService();

  uint16_t port() const;
  // Serves until every rank said goodbye or one disconnected, the init timeout passed with
  // ranks missing, or stop(). Runs on the root's own thread.
  void run();
  // Thread-safe: makes run() return promptly.
  void stop();

 private:
  class Impl;
  explicit RootService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Starts a root for `magic` on host:port (port 0: ephemeral) on its own thread, unless this
// process already runs one on that host:port. Returns the port it listens on. Root threads
// are joined when done (lazily) and at process exit.
Result<uint16_t> startRoot(const std::string& host, uint16_t port, uint64_t magic);

}  // namespace trnccl::bootstrap
