#include "transports/tcp/link.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <boost/asio/post.hpp>

#include "common/log.h"

namespace trnccl::transport::tcp {
namespace {

using boost::system::error_code;

std::array<asio::mutable_buffer, 2> buffersOf(const Pieces& pieces) {
  return {asio::buffer(pieces.part[0].data(), pieces.part[0].size()),
          asio::buffer(pieces.part[1].data(), pieces.part[1].size())};
}

}  // namespace

Link::Link(asio::io_context& io, int peer, Doorbell* bell, size_t ringBytes,
           std::vector<tcp::socket> sockets, std::vector<std::string> names, tcp::socket control,
           Liveness liveness)
    : io_(io),
      peer_(peer),
      bell_(bell),
      ringBytes_(ringBytes),
      control_(std::move(control)),
      ticker_(io),
      liveness_(liveness) {
  for (size_t s = 0; s < sockets.size(); ++s) {
    streams_.push_back(std::make_unique<Stream>(std::move(sockets[s]), std::move(names[s])));
  }
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

void Link::start() {
  for (size_t s = 0; s < streams_.size(); ++s) {
    {
      std::lock_guard lock(streams_[s]->mutex);
      streams_[s]->reading = true;
    }
    startRead(s);
  }
  startControl();
}

void Link::close() {
  closed_ = true;
  for (auto& stream : streams_) {
    error_code ignored;
    stream->socket.close(ignored);  // pending operations complete with operation_aborted
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
    if (used == 0) {
      st.writing = false;  // parked until commit() posts us again
      return;
    }
    data = piecesOf(st.out, st.out.tail, used);
  }
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
  bell_->ring();  // room for the sender
  startWrite(s);
}

void Link::startRead(size_t s) {
  if (closed_) return;
  Stream& st = *streams_[s];
  bool allocated;
  Pieces room;
  {
    std::lock_guard lock(st.mutex);
    allocated = st.in.data != nullptr;
    if (allocated) {
      uint64_t free = ringBytes_ - (st.in.head - st.in.tail);
      if (free == 0) {
        st.reading = false;  // parked until release() posts us again
        return;
      }
      room = piecesOf(st.in, st.in.head, free);
    }
  }
  if (!allocated) {
    auto ready = [self = shared_from_this(), s](const error_code& ec) {
      if (self->closed_) return;
      if (ec) return self->onError(s, ec);
      Stream& st = *self->streams_[s];
      {
        std::lock_guard lock(st.mutex);
        st.in.data = std::make_unique<std::byte[]>(self->ringBytes_);  // zeroed: see writable()
      }
      self->startRead(s);
    };
    st.socket.async_wait(tcp::socket::wait_read, std::move(ready));
    return;
  }
  st.socket.async_read_some(
      buffersOf(room),
      [self = shared_from_this(), s](const error_code& ec, size_t n) { self->onRead(s, ec, n); });
}

void Link::onRead(size_t s, const error_code& ec, size_t bytes) {
  if (closed_) return;
  if (ec) return onError(s, ec);
  heard_.touch();
  Stream& st = *streams_[s];
  {
    std::lock_guard lock(st.mutex);
    st.in.head += bytes;
  }
  bell_->ring();  // data for the receiver
  startRead(s);
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
    bell_->ring();
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
  bell_->ring();
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
    ssize_t n = ::sendmsg(st.socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) st.out.tail += static_cast<uint64_t>(n);
    // EAGAIN or an error: the I/O thread retries, and reports the error through asio.
    if (st.out.head == st.out.tail) return;
    st.writing = true;
  }
  asio::post(io_, [self = shared_from_this(), s] { self->startWrite(s); });
}

Pieces Link::readable(size_t s) {
  Stream& st = *streams_[s];
  std::lock_guard lock(st.mutex);
  return piecesOf(st.in, st.in.tail, st.in.head - st.in.tail);
}

void Link::release(size_t s, size_t bytes) {
  Stream& st = *streams_[s];
  bool kick = false;
  {
    std::lock_guard lock(st.mutex);
    st.in.tail += bytes;
    kick = !st.reading && !st.eof;
    st.reading = true;
  }
  if (kick) asio::post(io_, [self = shared_from_this(), s] { self->startRead(s); });
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
