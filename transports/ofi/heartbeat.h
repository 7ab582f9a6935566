// The liveness path of an ofi endpoint (transports/core/liveness.h): a second libfabric
// endpoint, with a fabric, domain, completion queue and address vector of its own, that carries
// only heartbeats, as the tcp transport's control socket does.
//
// Why a path of its own: over rxm every message between two ranks shares one connection (one
// TCP stream over the tcp provider). Under heavy loss a stream with ~170 KB of data in flight
// crawls, and a heartbeat queued behind that data arrived too late: the receiver failed a slow
// but working link (F10, docs/RELIABILITY.md). Here the heartbeats have their own connection,
// nearly empty, and its own lock, so neither a crawling data stream nor a long data-path call
// holds them up. A heartbeat's arrival touches the channel's LastHeard, as data does: a link
// fails only when nothing at all, data or heartbeat, arrived for the liveness timeout.
//
// Setup: greet() sends one heartbeat to every peer and waits until each peer's first arrived
// and its own were taken, so every pair's connection exists before the silence clock starts
// (through a slow path the first connection takes several round trips).
//
// Failures seen here, besides silence: a heartbeat send that completes with an error, and
// heartbeats refused (fi_tsend: -FI_EAGAIN, retried at every check) for three quarters of an
// interval on a connection that had taken earlier ones. The second is how a reset shows over
// rxm: it closes a reset connection quietly, and for the next heartbeat it reconnects, saying
// -FI_EAGAIN meanwhile, and the peer's side refuses. A heartbeat that was posted but has not
// completed is not judged: under 30 % loss one took over 400 ms to complete (a rule on those
// failed a working link in a long lossy run, F10), so only silence (T) covers that case.
//
// Shutdown: the destructor sends each peer a goodbye (a heartbeat with another payload) and
// waits for it a little; a peer that got it stops checking the link (an orderly close, as a
// tcp control socket's end of file), except while it still waits for data from this rank.
// Then it cancels the receives, reads their completions (bounded) and closes.
//
// Threads: every call takes mutex(); the provider is FI_THREAD_DOMAIN and this domain is used
// by this object alone.
#pragma once

#include <rdma/fi_tagged.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "transports/core/liveness.h"
#include "transports/ofi/buffer.h"
#include "transports/ofi/fid.h"

namespace trnccl::transport::ofi {

class Heartbeats {
 public:
  struct PeerConfig {
    int peer = -1;
    std::span<const std::byte> name;        // the peer's heartbeat endpoint
    std::chrono::milliseconds interval{0};  // the pair's (0: no heartbeats either way)
    std::chrono::milliseconds timeout{0};   // this rank's liveness timeout (0: no check)
    LastHeard* heard = nullptr;             // the peer's channel's, touched on each arrival
    const char* where = "";                 // names the link in errors (the provider)
  };

  // Opens the objects for a copy of `info` (the data endpoint's provider and domain).
  static Result<std::unique_ptr<Heartbeats>> open(const fi_info& info, int rank);
  ~Heartbeats();
  Heartbeats(const Heartbeats&) = delete;
  Heartbeats& operator=(const Heartbeats&) = delete;

  Result<std::vector<std::byte>> name() const;
  // Every peer, before greet(); `heard` must outlive this object.
  Status add(const PeerConfig& config);
  // Greets every peer with an interval and waits for their greetings, until `deadline`.
  Status greet(Deadline deadline);
  // Reads completions, sends the heartbeats due; true when a link failed just now.
  bool tick(Clock::time_point now);
  // The link to `peer`: a failed heartbeat, or silence past the timeout. A peer that said
  // goodbye is checked for silence only when `awaited` (this rank waits for its data).
  Status check(int peer, bool awaited);
  // The fastest interval of any peer (the pace tick() must be called at); 0: none.
  std::chrono::milliseconds fastest() const;
  // Every call holds it (tests hold it to silence this rank's heartbeats).
  std::mutex& mutex() { return mutex_; }

 private:
  struct Peer;
  struct Beat {
    fi_context2 context{};  // first: a completion's op_context points here
    Peer* peer = nullptr;
    bool send = false;
    bool posted = false;
  };
  struct Peer {
    PeerConfig config;
    fi_addr_t address = FI_ADDR_UNSPEC;
    RegisteredBuffer memory;  // 8 bytes each: out, in, bye
    Beat beatOut, beatIn, beatBye;
    uint64_t seq = 0;
    Clock::time_point sentAt{};
    Clock::time_point refusedSince{};  // fi_tsend said -FI_EAGAIN since then ({}: it did not)
    uint64_t postedAtRead = 0;         // reads_ when beatOut was posted
    // For the log at close: the most queue reads a heartbeat of ours needed to complete, and
    // the longest a check saw one pending (posted, not completed) or refused.
    uint64_t mostReads = 0;
    Clock::duration longestPending{};
    Clock::duration longestRefusal{};
    bool taken = false;    // a heartbeat of ours completed once: the connection exists
    bool greeted = false;  // the peer's first heartbeat arrived
    bool closed = false;   // the peer said goodbye
    bool reported = false;
    Status failure;
  };

  explicit Heartbeats(int rank) : rank_(rank) {}
  Status openObjects(const fi_info& info);
  Status post(Beat& beat, void* buffer, uint64_t tag, uint64_t ignore);
  Status send(Peer& peer, Beat& beat, std::byte* buffer, uint64_t magic);
  Status postReceive(Peer& peer);
  void progress();
  void arrived(Beat& beat);
  void failed(const fi_cq_err_entry& entry);
  void beat(Peer& p, Clock::time_point now, bool due);
  Status evaluate(Peer& peer, Clock::time_point now, bool awaited);
  Peer* find(int peer);
  void sayGoodbye();
  void cancelReceives();
  void logDelays() const;
  template <typename Done>
  void progressUntil(Done done, std::chrono::milliseconds limit);

  int rank_;
  std::mutex mutex_;
  bool mrLocal_ = false;
  size_t posted_ = 0;
  uint64_t reads_ = 0;  // progress() calls

  // Destroyed in reverse: endpoint, address vector, completion queue, the peers (their
  // registered memory), domain, fabric.
  InfoPtr info_;
  FabricPtr fabric_{nullptr, {"heartbeat fabric"}};
  DomainPtr domain_{nullptr, {"heartbeat domain"}};
  std::vector<std::unique_ptr<Peer>> peers_;  // stable addresses: completions point into them
  CqPtr cq_{nullptr, {"heartbeat completion queue"}};
  AvPtr av_{nullptr, {"heartbeat address vector"}};
  EpPtr ep_{nullptr, {"heartbeat endpoint"}};
};

}  // namespace trnccl::transport::ofi
