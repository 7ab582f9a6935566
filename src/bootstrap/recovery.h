// Recovery after a failure (trncclCommShrink, trncclCommGetFailedRanks): how the survivors of a
// communicator find each other again, and how a rank tells a dead peer from a live one.
//
// Why not the bootstrap root: it lives in one rank's process (rank 0's, or the id creator's)
// and serves a communicator only until its first failure. So at init every rank also opens a
// recovery port: a TCP listener on the bootstrap's interface, published with its check-in, that
// nothing serves until this rank leads a shrink (as NCCL's bootstrap keeps a listening socket
// per rank). It gives two answers:
//  - liveness: a connection to a peer's port is accepted by the kernel while the peer's
//    process lives (busy or even stopped) and refused once the process is gone (its descriptors
//    close at exit); no answer within the probe time means the host cannot be reached. It is a
//    verdict on the process, not on its progress: a stopped (SIGSTOP) rank counts as alive.
//  - the shrink rendezvous: the first survivor in the parent's order (the new rank 0) collects
//    one ask from every other survivor on its port, checks that all of them exclude the same
//    ranks, creates the new communicator's id (and root), and answers each ask with the id -
//    or all of them with the same error. Every survivor then initialises the new communicator
//    like trncclCommInitRank.
// Frames are the bootstrap's (bootstrap_wire.h: kShrinkAsk, kShrinkId, kError), checked the
// same way; the accept is the hardened one of transports/net.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/status.h"
#include "common/wait.h"

namespace trnccl::bootstrap {

// Where a rank's recovery port listens; invalid when the rank could not open one.
struct RecoveryAddress {
  static constexpr size_t kBytes = 64;  // encoded: u16 port, u8 host length, host
  std::string host;                     // numeric
  uint16_t port = 0;

  bool valid() const { return port != 0 && !host.empty(); }
  std::string name() const;  // "address:port"
  std::array<std::byte, kBytes> encode() const;
  static RecoveryAddress decode(std::span<const std::byte> bytes);  // invalid on junk
};

enum class Liveness { kAlive, kGone, kUnreachable };
const char* describe(Liveness liveness);  // "alive", "gone (connection refused)", ...

// Connects to every valid address at once; invalid ones are reported alive (nothing to ask).
// Bounded by `timeout`.
std::vector<Liveness> probe(const std::vector<RecoveryAddress>& peers,
                            std::chrono::milliseconds timeout);

// What a survivor tells the leader of a shrink, and what the leader compares.
struct ShrinkAsk {
  uint64_t parentMagic = 0;
  int rank = 0;               // in the parent
  std::vector<int> excluded;  // ascending
  // This rank's how-manieth shrink of the parent (from 1). A leader gives up on a shrink when a
  // survivor died; an ask for that shrink that reaches it later is answered with how it ended,
  // never counted in the next one.
  uint32_t attempt = 1;
};

class RecoveryPort {
 public:
  // Checks every `every` while the leader waits: an error (e.g. a survivor that died) ends the
  // wait and is what every asker gets.
  using CheckMissing = std::function<Status(const std::vector<int>& notHeardFrom)>;
  static constexpr std::chrono::milliseconds kCheckEvery{250};

  // Listens on the bootstrap's interface (chooseBootstrapHost), port 0.
  static Result<std::unique_ptr<RecoveryPort>> open(int rank);
  ~RecoveryPort();

  RecoveryAddress address() const;
  // Accepts and closes what waits (other ranks' probes), so the backlog never fills up.
  // Non-blocking; skipped while a shrink is led.
  void drain();
  // Leads a shrink: waits until every rank of `expected` asked (or `deadline`, or an error of
  // `check`); if all exclude mine.excluded, answers them with makeId()'s id, else all with the
  // same error, which is also returned.
  Result<UniqueId> lead(const ShrinkAsk& mine, const std::vector<int>& expected, Deadline deadline,
                        const CheckMissing& check, const std::function<Result<UniqueId>()>& makeId);

 private:
  struct Impl;
  explicit RecoveryPort(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Asks the leader (parent rank `leaderRank`, at `leader`) for the new communicator's id. An ask
// that finds the leader not serving yet (a drain closed it) is repeated until `deadline`.
Result<UniqueId> askToShrink(const RecoveryAddress& leader, int leaderRank, const ShrinkAsk& mine,
                             Deadline deadline);

}  // namespace trnccl::bootstrap
