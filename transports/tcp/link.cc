#include "transports/tcp/link.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/log.h"
#include "transports/tcp/testing.h"

namespace trnccl::transport::tcp {
namespace {

using boost::system::error_code;

std::array<asio::mutable_buffer, 2> buffersOf(const Pieces& pieces) {
  return {asio::buffer(pieces.part[0].data(), pieces.part[0].size()),
          asio::buffer(pieces.part[1].data(), pieces.part[1].size())};
}

tcp::socket::protocol_type protocolOf(const tcp::socket& socket) {
  error_code ec;
  tcp::endpoint local = socket.local_endpoint(ec);
  return ec ? tcp::v4() : local.protocol();
}

}  // namespace

Link::Link(asio::io_context& io, int peer, Doorbell* bell, size_t ringBytes,
           std::vector<tcp::socket> sockets, std::vector<std::string> names, tcp::socket control,
           Liveness liveness)
    : io_(io),
      peer_(peer),
      bell_(bell),
      wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      ringBytes_(ringBytes),
      control_(std::move(control)),
      ticker_(io),
      liveness_(liveness) {
  for (size_t s = 0; s < sockets.size(); ++s) {
    streams_.push_back(std::make_unique<Stream>(std::move(sockets[s]), std::move(names[s])));
    detachIfIdle(*streams_.back());  // nothing is pending yet
  }
}

Link::Stream::Stream(tcp::socket s, std::string n)
    : socket(std::move(s)),
      protocol(protocolOf(socket)),
      fd(socket.native_handle()),
      name(std::move(n)) {}

Link::Stream::~Stream() {
  if (open && !attached) ::close(fd);  // attached, the socket closes it
}

bool Link::attach(size_t s) {
  Stream& st = *streams_[s];
  if (st.attached) return true;
  error_code ec;
  st.socket.assign(st.protocol, st.fd, ec);
  st.attached = !ec;
  if (ec) onError(s, ec);
  return st.attached;
}

void Link::detachIfIdle(Stream& st) {
  {
    std::lock_guard lock(st.mutex);
    if (st.writing || st.watching) return;
  }
  if (!st.attached) return;
  error_code ignored;
  st.socket.release(ignored);  // the descriptor stays open, ours
  st.attached = false;
}

Pieces Link::piecesOf(Ring& ring, uint64_t from, uint64_t bytes) const {
  Pieces pieces;
  if (bytes == 0) return pieces;
  size_t offset = from % ringBytes_;
  size_t first = std::min<uint64_t>(bytes, ringBytes_ - offset);
  pieces.part[0] = {ring.data.get() + offset, first};
  pieces.part[1] = {ring.data.get(), static_cast<size_t>(bytes - first)};
  return pieces;
}

// ---- I/O thread ----

void Link::start() { startControl(); }

void Link::close() {
  closed_ = true;
  for (auto& stream : streams_) {
    error_code ignored;
    if (stream->attached) {
      stream->socket.close(ignored);  // pending operations complete with operation_aborted
    } else if (stream->open) {
      ::close(stream->fd);
    }
    stream->attached = false;
    stream->open = false;
  }
  closeControl();
}

void Link::startWrite(size_t s) {
  if (closed_) return;
  Stream& st = *streams_[s];
  Pieces data;
  {
    std::lock_guard lock(st.mutex);
    uint64_t used = st.out.head - st.out.tail;
    if (used == 0) st.writing = false;  // parked until commit() posts us again
    data = piecesOf(st.out, st.out.tail, used);
  }
  if (data.bytes() == 0) return detachIfIdle(st);
  if (!attach(s)) return;
  st.socket.async_write_some(buffersOf(data),
                             [self = shared_from_this(), s](const error_code& ec, size_t n) {
                               self->onWritten(s, ec, n);
                             });
}

void Link::onWritten(size_t s, const error_code& ec, size_t bytes) {
  if (closed_) return;
  if (ec) return onError(s, ec);
  Stream& st = *streams_[s];
  {
    std::lock_guard lock(st.mutex);
    st.out.tail += bytes;
  }
  notify();  // room for the sender
  startWrite(s);
}

// Watches stream s until it turns readable. The reactor is edge-triggered, so bytes that
// arrived before the wait was queued would not complete it: look once after queueing it.
void Link::startWatch(size_t s) {
  if (closed_) return;
  Stream& st = *streams_[s];
  if (!attach(s)) return;
  st.socket.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this(), s](const error_code& ec) {
                         if (self->closed_ || ec == asio::error::operation_aborted) return;
                         Stream& st = *self->streams_[s];
                         {
                           std::lock_guard lock(st.mutex);
                           st.watching = false;
                         }
                         if (ec) return self->onError(s, ec);
                         self->detachIfIdle(st);
                         self->notify();
                       });
  pollfd p{st.fd, POLLIN, 0};
  if (::poll(&p, 1, 0) > 0) notify();
}

// Records the failure and wakes the executor, which learns it from recvSome/sendDone/checkPeer
// within one doorbell sleep. The failed direction stays flagged busy, so nothing restarts it.
void Link::onError(size_t s, const error_code& ec) {
  Stream& st = *streams_[s];
  if (ec == asio::error::eof) {
    {
      std::lock_guard lock(st.mutex);
      st.eof = true;
    }
    notify();
    return;
  }
  fail(Status(
      Code::kRemoteError,
      fmt::format("tcp: connection to rank {} ({}) closed: {}", peer_, st.name, ec.message()),
      peer_));
}

void Link::fail(Status status) {
  TRN_WARN(kNet, "{}", status.message());
  {
    std::lock_guard lock(failureMutex_);
    if (failure_.isOk()) failure_ = std::move(status);
    failed_.store(true, std::memory_order_release);
  }
  notify();
}

void Link::notify() {
  bell_->ring();
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof(one));  // full: already due
}

// ---- executor's thread ----

Pieces Link::writable(size_t s) {
  Stream& st = *streams_[s];
  std::lock_guard lock(st.mutex);
  // Zero-filled, so every page is mapped now: pages first touched as the ring advances cost a
  // fault each (a slow one on our VMs), and kept all-gathers of 1 MiB at ~11 ms until the
  // 4 MiB rings had wrapped once.
  if (st.out.data == nullptr) st.out.data = std::make_unique<std::byte[]>(ringBytes_);
  return piecesOf(st.out, st.out.head, ringBytes_ - (st.out.head - st.out.tail));
}

// When the I/O thread is not writing this stream, the executor's thread writes what it can
// itself (non-blocking) and hands only a remainder to the I/O thread: a small message then
// reaches the kernel without waking another thread, which on oversubscribed cores costs more
// than the send. `writing` says who owns the socket's write side; it is false here, so the I/O
// thread is not writing, and stays false until this thread posts it. close() runs only after
// the executor is done with the connection (TcpConnection's destructor), so the descriptor is
// open.
void Link::commit(size_t s, size_t bytes) {
  Stream& st = *streams_[s];
  {
    std::lock_guard lock(st.mutex);
    st.out.head += bytes;
    if (st.writing) return;  // the I/O thread's write loop will find the new bytes
    Pieces data = piecesOf(st.out, st.out.tail, st.out.head - st.out.tail);
    std::array<iovec, 2> iov = {iovec{data.part[0].data(), data.part[0].size()},
                                iovec{data.part[1].data(), data.part[1].size()}};
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = data.part[1].empty() ? 1 : 2;
    ssize_t n = ::sendmsg(st.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) st.out.tail += static_cast<uint64_t>(n);
    // EAGAIN or an error: the I/O thread retries, and reports the error through asio.
    if (st.out.head == st.out.tail) return;
    st.writing = true;
  }
  asio::post(io_, [self = shared_from_this(), s] { self->startWrite(s); });
}

size_t Link::writeDirect(size_t s, std::span<const std::byte> head,
                         std::span<const std::byte> body) {
  Stream& st = *streams_[s];
  std::lock_guard lock(st.mutex);
  if (st.writing || st.out.head != st.out.tail) return 0;  // bytes queued before these
  std::array<iovec, 2> iov = {iovec{const_cast<std::byte*>(head.data()), head.size()},
                              iovec{const_cast<std::byte*>(body.data()), body.size()}};
  msghdr msg{};
  msg.msg_iov = head.empty() ? &iov[1] : iov.data();
  msg.msg_iovlen = head.empty() ? 1 : 2;
  // EAGAIN or an error: the caller stages the bytes instead, and commit() hands them to the
  // I/O thread, which reports the error through asio.
  ssize_t n = ::sendmsg(st.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

// Reads what the socket holds (at most `cap` bytes) into the free space of the inbound ring,
// without blocking.
error_code Link::pull(Stream& st, size_t cap) {
  // Zero-filled, so every page is mapped now (see writable()).
  if (st.in.data == nullptr) st.in.data = std::make_unique<std::byte[]>(ringBytes_);
  const uint64_t free = std::min<uint64_t>(cap, ringBytes_ - (st.in.head - st.in.tail));
  if (free == 0 || st.eof) return {};
  // An empty socket is read again only when its Repoll says so (repoll.h); waitForNews's
  // poll(2) sees bytes that arrive meanwhile at once.
  const auto now = Clock::now();
  if (!st.repoll.due(now)) return {};
  Pieces room = piecesOf(st.in, st.in.head, free);
  std::array<iovec, 2> iov = {iovec{room.part[0].data(), room.part[0].size()},
                              iovec{room.part[1].data(), room.part[1].size()}};
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = room.part[1].empty() ? 1 : 2;
  ssize_t n = ::recvmsg(st.fd, &msg, MSG_DONTWAIT);
  if (n > 0) st.in.head += static_cast<uint64_t>(n);
  return afterRead(st, n, now);
}

error_code Link::afterRead(Stream& st, ssize_t n, Clock::time_point now) {
  if (n > 0) {
    st.repoll.reset();
    heard_.touch();
    return {};
  }
  if (n == 0) {
    st.eof = true;
    return {};
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
    st.repoll.empty(now);
    return {};
  }
  return error_code(errno, boost::system::system_category());
}

Pieces Link::readable(size_t s, size_t want, bool exact) {
  Stream& st = *streams_[s];
  error_code ec;
  Pieces data;
  {
    std::lock_guard lock(st.mutex);
    const uint64_t held = st.in.head - st.in.tail;
    if (held < want) ec = pull(st, exact ? want - held : SIZE_MAX);
    data = piecesOf(st.in, st.in.tail, st.in.head - st.in.tail);
  }
  if (ec) onError(s, ec);
  return data;
}

size_t Link::readInto(size_t s, std::byte* dst, size_t max) {
  Stream& st = *streams_[s];
  error_code ec;
  size_t moved = 0;
  {
    std::lock_guard lock(st.mutex);
    if (uint64_t held = st.in.head - st.in.tail; held > 0) {
      Pieces data = piecesOf(st.in, st.in.tail, std::min<uint64_t>(held, max));
      for (const auto& part : data.part) {
        std::memcpy(dst + moved, part.data(), part.size());
        moved += part.size();
      }
      st.in.tail += moved;
      return moved;
    }
    const auto now = Clock::now();
    if (st.eof || !st.repoll.due(now)) return 0;
    ssize_t n = ::recv(st.fd, dst, max, MSG_DONTWAIT);
    if (n > 0) {
      moved = static_cast<size_t>(n);
      // The empty ring's positions move past these bytes too, so they keep counting the
      // socket's bytes: what later lands in the ring sits at its offset in the stream (mod the
      // ring's size, a multiple of 4 KiB), and a payload is as aligned there as its message
      // lays it out. Without it a direct read of an odd count shifted every later payload off
      // its element boundary, and each reduction from the ring went through StepRun::apply's
      // aligned copy (~4 % of a 2-rank 1 MiB all-reduce's samples: a memcpy of half the data).
      st.in.head += moved;
      st.in.tail += moved;
      testing::counters().add(testing::Event::kReadInPlace, n);
    }
    ec = afterRead(st, n, now);
  }
  if (ec) onError(s, ec);
  return moved;
}

void Link::release(size_t s, size_t bytes) {
  Stream& st = *streams_[s];
  std::lock_guard lock(st.mutex);
  st.in.tail += bytes;
}

Status Link::probe() {
  for (size_t s = 0; s < streams_.size(); ++s) {
    Stream& st = *streams_[s];
    std::byte byte;
    ssize_t n = ::recv(st.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      std::lock_guard lock(st.mutex);
      st.eof = true;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      onError(s, error_code(errno, boost::system::system_category()));
    }
  }
  return failed() ? failure() : Status::ok();
}

int Link::socketFd(size_t s) {
  Stream& st = *streams_[s];
  std::lock_guard lock(st.mutex);
  return st.eof ? -1 : st.fd;
}

void Link::wokeUp() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = ::read(wake_.get(), &count, sizeof(count));
  for (auto& stream : streams_) {
    std::lock_guard lock(stream->mutex);
    stream->repoll.reset();
  }
}

void Link::watch(size_t s) {
  Stream& st = *streams_[s];
  {
    std::lock_guard lock(st.mutex);
    if (st.watching || st.eof) return;
    st.watching = true;
  }
  asio::post(io_, [self = shared_from_this(), s] { self->startWatch(s); });
}

bool Link::flushed() {
  for (auto& stream : streams_) {
    std::lock_guard lock(stream->mutex);
    if (stream->out.head != stream->out.tail) return false;
  }
  return true;
}

bool Link::atEof(size_t s) {
  std::lock_guard lock(streams_[s]->mutex);
  return streams_[s]->eof;
}

Status Link::failure() const {
  std::lock_guard lock(failureMutex_);
  return failure_;
}

Status Link::liveness() {
  if (failed()) return failure();
  if (!controlOpen_.load(std::memory_order_acquire)) return Status::ok();
  Status alive = checkLiveness(heard_, liveness_.timeout, "tcp", peer_, streams_[0]->name);
  if (!alive) fail(std::move(alive));  // sticks, whichever thread saw it first
  return failed() ? failure() : Status::ok();
}

}  // namespace trnccl::transport::tcp
