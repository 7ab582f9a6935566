// The sockets to one peer and their staging rings.
//
// Each socket (a stream) has an outbound ring, filled by the executor's thread and written to
// the socket by that thread while the socket is idle (commit()) or else by the I/O thread, and
// an inbound ring, which the executor's thread fills from the socket itself (non-blocking
// reads in readable()) and consumes: a received message reaches the executor without waking
// another thread. While nothing is queued on a stream, the executor's thread writes straight
// from the caller's buffer (writeDirect()) and may read straight into the destination
// (readInto()), so neither ring costs a copy then. The ring positions and the writing flag are
// guarded by the stream's mutex; the bytes themselves are copied outside it (the producer only
// touches free space, the consumer only published bytes). The I/O thread notifies (rings the
// doorbell and the link's event fd) whenever room frees up or a socket fails, and parks the
// write side when its ring is empty; the executor's side posts it back to work.
//
// A data socket is registered with the I/O thread's reactor (epoll, edge-triggered) only while
// that thread writes it or watches it, and released again when neither is pending: registered,
// every arrival woke the I/O thread once for nothing (strace of a 2-rank 8-byte all-reduce: one
// epoll_wait return per message, ~3.6 context switches per call, against ~0.3-0.7 without).
//
// Waiting: an executor whose connections are all TCP blocks in poll(2) on the sockets it
// expects bytes from and on the event fd (wakeFd()). One waiting on the doorbell instead (it
// also waits for shm or libfabric) first asks the I/O thread to watch the socket (watch()),
// which then rings the doorbell once bytes arrive.
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

#include "common/fd_guard.h"
#include "common/status.h"
#include "common/wait.h"
#include "transports/core/liveness.h"
#include "transports/tcp/repoll.h"

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
  void start();  // starts the heartbeats
  void close();  // closes every socket; afterwards no handler touches the doorbell

  // ---- executor's thread ----
  Pieces writable(size_t s);            // free space of stream s's outbound ring
  void commit(size_t s, size_t bytes);  // publishes bytes copied into writable()
  // Writes `head` then `body` straight to stream s's socket, without blocking and without a
  // copy, when nothing is queued before them (the ring is empty and the I/O thread is not
  // writing); returns how many bytes the socket took (0: none, or the stream is busy).
  size_t writeDirect(size_t s, std::span<const std::byte> head, std::span<const std::byte> body);
  // Received bytes of stream s not yet released; reads the socket first (non-blocking) when
  // fewer than `want` are there: as much as the ring takes, or with `exact` no byte beyond
  // `want` (what follows goes to readInto()).
  Pieces readable(size_t s, size_t want, bool exact = false);
  // Moves up to `max` bytes of stream s to `dst`: what the ring holds first, else straight
  // from the socket (non-blocking, no staging copy); returns how many.
  size_t readInto(size_t s, std::byte* dst, size_t max);
  void release(size_t s, size_t bytes);  // frees the first `bytes` of readable()
  // Looks for an end of file or a reset on every socket without taking any byte; the link's
  // failure, or OK.
  Status probe();
  // What a waiter may poll(2) for POLLIN: stream s's socket (-1 once at end of file), and the
  // event fd the I/O thread writes when room frees up or the link fails.
  int socketFd(size_t s);
  int wakeFd() const { return wake_.get(); }
  // After poll(2) saw one of the descriptors readable: drains the event fd, and the next
  // readable() reads the sockets at once.
  void wokeUp();
  // Until bytes arrive on stream s, the I/O thread watches its socket and rings the doorbell
  // when they do (for a waiter that sleeps on the doorbell).
  void watch(size_t s);
  bool flushed();        // every committed byte was written to its socket
  bool atEof(size_t s);  // the peer closed stream s: readable() stops growing
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
    Stream(tcp::socket s, std::string n);
    ~Stream();
    // The socket, registered with the I/O thread's reactor only while that thread writes or
    // watches it (attach(), detachIfIdle()): registered, every arrival would wake the I/O
    // thread (the reactor is edge-triggered on input), one needless wake-up per message.
    tcp::socket socket;
    const tcp::socket::protocol_type protocol;
    const int fd;          // what the executor's thread reads and writes
    bool attached = true;  // I/O thread only: `socket` holds fd
    bool open = true;      // I/O thread only: fd not closed yet
    const std::string name;
    std::mutex mutex;
    Ring out;
    Ring in;
    bool writing = false;   // a write is in flight or posted (stays set after an error)
    bool watching = false;  // a wait for readable bytes is posted (watch())
    bool eof = false;
    // When the executor reads the socket again after it found it empty (pull(), readInto());
    // reset by bytes and by wokeUp().
    Repoll repoll;
  };

  Pieces piecesOf(Ring& ring, uint64_t from, uint64_t bytes) const;
  bool attach(size_t s);          // I/O thread: registers the socket for an async operation
  void detachIfIdle(Stream& st);  // I/O thread: unregisters it when nothing is pending
  void startWrite(size_t s);
  boost::system::error_code pull(Stream& st, size_t cap);  // stream mutex held
  // After a read of the socket returned `n` (errno set when negative); stream mutex held.
  boost::system::error_code afterRead(Stream& st, ssize_t n, Clock::time_point now);
  void startWatch(size_t s);
  void onWritten(size_t s, const boost::system::error_code& ec, size_t bytes);
  void onError(size_t s, const boost::system::error_code& ec);
  void fail(Status status);  // records the first failure, wakes the executor
  void notify();             // rings the doorbell and the event fd

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
  FdGuard wake_;  // eventfd: the I/O thread's news for a waiter in poll(2)
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
