// The sockets to one peer and their staging rings: the half of a TCP connection that the I/O
// thread drives.
//
// Each socket (a stream) has an outbound ring, filled by the executor's thread and written to
// the socket by that thread while the socket is idle (commit()) or else by the I/O thread, and
// an inbound ring, filled from the socket by the I/O thread and consumed by the executor's
// thread. The ring positions and the writing/reading flags are
// guarded by the stream's mutex; the bytes themselves are copied outside it (the producer only
// touches free space, the consumer only published bytes). The I/O thread rings the doorbell
// whenever bytes arrive, room frees up, or a socket fails, and parks a direction when its ring
// is empty (write) or full (read); the executor's side posts it back to work.
//
// Liveness (transports/core/liveness.h): besides the data sockets, a control socket carries
// only heartbeats (link_control.cc). The I/O thread writes one every heartbeat interval and
// reads the peer's, and fails the link with kTimeout once nothing at all (data or heartbeat)
// arrived for the liveness timeout. A reset of the control socket fails the link too (a rank
// that only receives learns of a reset path from its next heartbeat); its end of file, which
// a peer destroying its communicator sends first, only stops the check, as we may still be
// reading that peer's last data.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wait.h"
#include "transports/core/liveness.h"

namespace trnccl::transport::tcp {

namespace asio = boost::asio;
using asio::ip::tcp;

// Up to two contiguous pieces of a ring (two when the range wraps).
struct Pieces {
  std::array<std::span<std::byte>, 2> part;
  size_t bytes() const { return part[0].size() + part[1].size(); }
};

class Link : public std::enable_shared_from_this<Link> {
 public:
  struct Liveness {
    std::chrono::milliseconds heartbeat{0};  // the pair's interval; 0: no heartbeats
    std::chrono::milliseconds timeout{0};    // this rank's liveness timeout; 0: no check
  };

  // `sockets` and `control` belong to `io`; `names` are the data sockets' peer addresses
  // ("127.0.0.1:41234").
  Link(asio::io_context& io, int peer, Doorbell* bell, size_t ringBytes,
       std::vector<tcp::socket> sockets, std::vector<std::string> names, tcp::socket control,
       Liveness liveness);
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  size_t streams() const { return streams_.size(); }
  int peer() const { return peer_; }
  const std::string& name(size_t s) const { return streams_[s]->name; }

  // ---- I/O thread ----
  void start();  // starts reading every socket, and the heartbeats
  void close();  // closes every socket; afterwards no handler touches the doorbell

  // ---- executor's thread ----
  Pieces writable(size_t s);             // free space of stream s's outbound ring
  void commit(size_t s, size_t bytes);   // publishes bytes copied into writable()
  Pieces readable(size_t s);             // received bytes of stream s not yet released
  void release(size_t s, size_t bytes);  // frees the first `bytes` of readable()
  bool flushed();                        // every committed byte was written to its socket
  bool atEof(size_t s);                  // the peer closed stream s: readable() stops growing
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  Status failure() const;  // the first hard socket error (EOF is not one), or a liveness timeout
  // The link's failure, failing it first if it has been silent for longer than the liveness
  // timeout; OK while it lives (any thread).
  Status liveness();

 private:
  struct Ring {
    std::unique_ptr<std::byte[]> data;  // allocated on first use: idle links cost no memory
    uint64_t head = 0;                  // producer position
    uint64_t tail = 0;                  // consumer position
  };
  struct Stream {
    Stream(tcp::socket s, std::string n) : socket(std::move(s)), name(std::move(n)) {}
    tcp::socket socket;
    const std::string name;
    std::mutex mutex;
    Ring out;
    Ring in;
    bool writing = false;  // a write is in flight or posted (stays set after an error)
    bool reading = false;  // a read or wait is in flight or posted (stays set after an error)
    bool eof = false;
  };

  Pieces piecesOf(Ring& ring, uint64_t from, uint64_t bytes) const;
  void startWrite(size_t s);
  void startRead(size_t s);
  void onWritten(size_t s, const boost::system::error_code& ec, size_t bytes);
  void onRead(size_t s, const boost::system::error_code& ec, size_t bytes);
  void onError(size_t s, const boost::system::error_code& ec);
  void fail(Status status);  // records the first failure, wakes the executor

  // link_control.cc
  void startControl();
  void readControl();
  void onControlRead(const boost::system::error_code& ec, size_t bytes);
  void endControl(const boost::system::error_code& ec);
  void armTicker();
  void onTick();
  void closeControl();

  asio::io_context& io_;
  const int peer_;
  Doorbell* const bell_;
  const size_t ringBytes_;
  std::vector<std::unique_ptr<Stream>> streams_;
  bool closed_ = false;  // I/O thread only
  // The control socket and its state, I/O thread only but for the atomics.
  tcp::socket control_;
  asio::steady_timer ticker_;
  const Liveness liveness_;
  std::array<std::byte, 64> controlIn_{};
  uint64_t controlRead_ = 0;  // bytes read from the control socket, ever
  bool controlWriting_ = false;
  std::atomic<bool> controlOpen_{true};
  LastHeard heard_;  // any byte from the peer, on any socket
  std::atomic<bool> failed_{false};
  mutable std::mutex failureMutex_;
  Status failure_;
};

}  // namespace trnccl::transport::tcp
