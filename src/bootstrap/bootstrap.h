// Bootstrap: how the ranks of a new communicator find each other, over TCP (Boost.Asio).
//
// The future rank 0 creates a UniqueId (root address + random 64-bit magic) and starts the root
// service; the id travels out of band. Every rank connects to the root and checks in with
// (magic, protocol version, rank, nranks, its PeerInfo blob). The root checks magic and rank
// range, rejects duplicates, and when all nranks have checked in sends everyone the table of
// blobs. The connections stay open: afterwards the root relays allGather() and barrier() for
// transport setup and communicator split, until every rank has said goodbye.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "transports/core/transport.h"

namespace trnccl::bootstrap {

// The decoded content of trncclUniqueId (which is 128 opaque bytes).
struct UniqueId {
  uint64_t magic = 0;
  std::string host;  // numeric IPv4/IPv6 address of the root
  uint16_t port = 0;
  bool fromEnv = false;  // built from TRNCCL_COMM_ID: rank 0 starts the root at init
  // The interface of the root's host that `host` belongs to, for error messages of ranks that
  // cannot reach it; empty when TRNCCL_COMM_ID or TRNCCL_BOOTSTRAP_HOST gave the address.
  std::string interface {};
  // trncclCommInitRankScalable's ids, all of them (this one first); empty: this root alone.
  std::vector<UniqueId> scalable{};

  void encode(char out[128]) const;
  static Result<UniqueId> decode(const char in[128]);
};

// Creates a new id. With TRNCCL_COMM_ID=host:port set, returns the id every caller gets for that
// address (magic derived from it) and starts no root. Otherwise binds a listener on this host
// (chooseBootstrapHost(): the interface TRNCCL_SOCKET_IFNAME selects, as for tcp) on an
// ephemeral port and starts the root service in the background. useCommIdEnv = false
// always makes a fresh id with its own root (communicator split needs one per new comm).
Result<UniqueId> createUniqueId(bool useCommIdEnv = true);

// Starts the root service for an id made from TRNCCL_COMM_ID, if this process has none for it.
Status ensureRoot(const UniqueId& id);

class Bootstrap : public transport::OobChannel {
 public:
  // Checks in at the root as `rank` of `nranks` with `info`, and waits for the table of every
  // rank's info (rank order), all before `deadline`.
  static Result<std::unique_ptr<Bootstrap>> connect(const UniqueId& id, int rank, int nranks,
                                                    std::span<const std::byte> info,
                                                    Deadline deadline);
  // The same over several roots (trncclCommInitRankScalable): ids[0] and ids.size() - 1
  // groups of consecutive ranks, each with its own root (tiered.cc). One id: connect().
  static Result<std::unique_ptr<Bootstrap>> connectScalable(std::span<const UniqueId> ids, int rank,
                                                            int nranks,
                                                            std::span<const std::byte> info,
                                                            Deadline deadline);
  ~Bootstrap() override;

  int rank() const;
  int nranks() const;
  // The group of this rank over several roots (connectScalable: checked in at the root of
  // ids[group() + 1]), and whether it leads it (also at ids[0]'s); -1 and false with one root.
  int group() const;
  bool leader() const;
  // Every rank's info blob from check-in, rank order.
  const std::vector<std::vector<std::byte>>& infos() const;

  // Relayed through the root; each waits at most the bootstrap's operation timeout
  // (setTimeout, default 2 minutes) and fails fast if the root reports a rank gone.
  Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override;
  Status barrier() override;
  void setTimeout(std::chrono::milliseconds timeout);
  // Non-blocking, any thread: an error once the root has failed the communicator (it sent an
  // error frame: a rank disconnected or died) or the root itself is gone. Between exchanges
  // the root sends nothing else, so a peek at the socket is enough. OK while an exchange runs.
  // With rootExitFails = false a root that closed the connection cleanly (its process exited,
  // e.g. rank 0 finalized and left) is not reported: only an error frame or a broken socket is.
  Status checkRoot(bool rootExitFails = true);
  // Unblocks any wait of this bootstrap from another thread; later calls fail.
  void abort();
  // Tells the root this rank revoked the communicator (it then fails every rank with that
  // message), then aborts. While an exchange holds the connection, aborting alone tells the
  // root too (it reports this rank as disconnected). Any thread; bounded by 1 s. Over several
  // roots the revoke reaches every rank of every group (tiered.cc).
  void revoke();

 private:
  // revoke(), the root failing every rank with `why` (its message and code) unless it is OK.
  void revokeWith(const Status& why);
  // Rank 0's `mine` (any size up to the allGather limit), relayed by the root to every rank
  // once; the other ranks pass nothing. One root only (a tier's session).
  Result<std::vector<std::byte>> broadcastFromFirst(std::span<const std::byte> mine);

  struct Impl;
  struct Tiers;
  explicit Bootstrap(std::unique_ptr<Impl> impl);
  explicit Bootstrap(std::unique_ptr<Tiers> tiers);
  std::unique_ptr<Impl> impl_;    // one root
  std::unique_ptr<Tiers> tiers_;  // or several (then impl_ is null)
};

}  // namespace trnccl::bootstrap
