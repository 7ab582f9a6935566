#include "transports/tcp/tcp_connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>

#include "transports/tcp/testing.h"

namespace trnccl::transport::tcp {
namespace {

// The smallest chunk whose payload is read straight into its destination (recvInto): below it,
// reading header and payload into the ring at once saves a system call per message.
constexpr uint64_t kDirectReadBytes = 16 * 1024;

// Copies `bytes` from `src` into `pieces`, starting `offset` bytes in.
void copyInto(const Pieces& pieces, size_t offset, const void* src, size_t bytes) {
  const auto* from = static_cast<const std::byte*>(src);
  for (const auto& part : pieces.part) {
    if (bytes == 0) return;
    if (offset >= part.size()) {
      offset -= part.size();
      continue;
    }
    size_t n = std::min(bytes, part.size() - offset);
    std::memcpy(part.data() + offset, from, n);
    from += n;
    bytes -= n;
    offset = 0;
  }
}

void copyFrom(const Pieces& pieces, void* dst, size_t bytes) {
  auto* to = static_cast<std::byte*>(dst);
  for (const auto& part : pieces.part) {
    size_t n = std::min(bytes, part.size());
    std::memcpy(to, part.data(), n);
    to += n;
    bytes -= n;
  }
}

}  // namespace

TcpConnection::TcpConnection(std::shared_ptr<IoThread> io, std::shared_ptr<Link> link,
                             size_t bufferBytes)
    : io_(std::move(io)),
      link_(std::move(link)),
      bufferBytes_(bufferBytes),
      send_("tcp", MessageState::Direction::kSend, link_->peer()),
      recv_("tcp", MessageState::Direction::kRecv, link_->peer()) {
  boost::asio::post(io_->context(), [link = link_] { link->start(); });
}

TcpConnection::~TcpConnection() {
  // Synchronous, so that no handler rings the doorbell once the caller may free it.
  io_->runSync([link = link_.get()] { link->close(); });
}

TcpConnection::Chunk TcpConnection::chunkAt(uint64_t position, uint64_t messageBytes) const {
  uint64_t index = position / kChunkBytes;
  Chunk chunk;
  chunk.stream = static_cast<size_t>(index % link_->streams());
  chunk.offset = index * kChunkBytes;
  chunk.bytes = std::min(kChunkBytes, messageBytes - chunk.offset);
  return chunk;
}

// ---- sending ----

Status TcpConnection::beginSend(uint64_t tag, size_t bytes) {
  TRN_TRY(send_.begin(tag, bytes));
  headerStaged_ = false;
  return Status::ok();
}

Result<size_t> TcpConnection::sendSome(const void* src, size_t bytes) {
  if (link_->failed()) return link_->failure();
  const auto* from = static_cast<const std::byte*>(src);
  size_t offered = send_.clamp(bytes);
  size_t taken = 0;
  while (taken < offered) {
    Chunk chunk = chunkAt(send_.moved(), send_.bytes());
    size_t n =
        stage(chunk.stream, from + taken,
              std::min<uint64_t>(offered - taken, chunk.offset + chunk.bytes - send_.moved()));
    if (n == 0) break;
    taken += n;
    send_.advance(n);
    if (send_.moved() == chunk.offset + chunk.bytes) headerStaged_ = false;
  }
  return taken;
}

// Hands `bytes` (all within the chunk at send_.moved()) to stream `stream`, behind the chunk's
// header if that has not gone yet: straight to the socket while nothing is queued on it (no
// copy), and what the socket did not take copied into the stream's ring; returns the payload
// bytes taken.
size_t TcpConnection::stage(size_t stream, const std::byte* src, size_t bytes) {
  FrameHeader frame;
  size_t header = 0;
  if (!headerStaged_) {
    Chunk chunk = chunkAt(send_.moved(), send_.bytes());
    frame.chunkBytes = static_cast<uint32_t>(chunk.bytes);
    frame.tag = send_.tag();
    frame.messageBytes = send_.bytes();
    frame.offset = chunk.offset;
    header = sizeof(frame);
  }
  const auto* head = reinterpret_cast<const std::byte*>(&frame);
  size_t wrote = link_->writeDirect(stream, {head, header}, {src, bytes});
  const size_t headWrote = std::min(wrote, header);
  const size_t bodyWrote = wrote - headWrote;
  if (wrote > 0) {
    headerStaged_ = true;
    testing::counters().add(testing::Event::kWrittenInPlace, static_cast<int64_t>(wrote));
  }
  if (bodyWrote == bytes && headWrote == header) return bytes;
  // The rest through the ring, in order behind what the socket took.
  const size_t headLeft = header - headWrote;
  Pieces room = link_->writable(stream);
  if (room.bytes() <= headLeft) return bodyWrote;  // only when nothing was written
  size_t n = std::min(bytes - bodyWrote, room.bytes() - headLeft);
  copyInto(room, 0, head + headWrote, headLeft);
  copyInto(room, headLeft, src + bodyWrote, n);
  headerStaged_ = true;
  testing::counters().add(testing::Event::kStaged, static_cast<int64_t>(headLeft + n));
  link_->commit(stream, headLeft + n);
  return bodyWrote + n;
}

Result<bool> TcpConnection::sendDone() {
  if (send_.complete() && link_->flushed()) return true;
  if (link_->failed()) return link_->failure();
  return false;
}

// ---- receiving ----

Status TcpConnection::beginRecv(uint64_t tag, size_t bytes) {
  TRN_TRY(recv_.begin(tag, bytes));
  headerSeen_ = false;
  return Status::ok();
}

Status TcpConnection::checkHeader(const FrameHeader& header, const Chunk& chunk) const {
  std::string problem = frameProblem(header, recv_.tag(), recv_.bytes(), chunk.offset, chunk.bytes);
  if (problem.empty()) return Status::ok();
  return Status(
      Code::kInternalError,
      fmt::format("tcp: from rank {} ({}): {}", peer(), link_->name(chunk.stream), problem),
      peer());
}

// Reads and checks the header of `chunk`; false when it has not fully arrived. `alone`: read no
// byte beyond the header from the socket (the payload goes straight to its destination).
Result<bool> TcpConnection::readHeader(const Chunk& chunk, bool alone) {
  Pieces data = link_->readable(chunk.stream, sizeof(FrameHeader), alone);
  if (data.bytes() < sizeof(FrameHeader)) return false;
  FrameHeader header;
  copyFrom(data, &header, sizeof(header));
  TRN_TRY(checkHeader(header, chunk));
  link_->release(chunk.stream, sizeof(header));
  headerSeen_ = true;
  return true;
}

size_t TcpConnection::handOut(size_t stream, size_t bytes, const Consumer& consume) {
  Pieces data = link_->readable(stream, bytes);
  size_t handed = 0;
  for (const auto& part : data.part) {
    size_t n = std::min(bytes - handed, part.size());
    if (n == 0) break;
    consume(recv_.moved() + handed, part.data(), n);
    handed += n;
  }
  if (handed > 0) link_->release(stream, handed);
  return handed;
}

Result<size_t> TcpConnection::recvSome(size_t max, const Consumer& consume) {
  return receive(max, &consume, nullptr);
}

// Like recvSome with a consumer that copies to dst + offset, but the payload of a chunk of at
// least kDirectReadBytes is read from the socket straight into dst: the staging ring and its
// copy are skipped (smaller chunks take the ring, where header and payload come in one read).
Result<size_t> TcpConnection::recvInto(std::byte* dst, size_t max) {
  return receive(max, nullptr, dst);
}

// recvSome (`consume`) or recvInto (`dst`).
Result<size_t> TcpConnection::receive(size_t max, const Consumer* consume, std::byte* dst) {
  Consumer copy;
  if (consume == nullptr) {
    copy = [dst](size_t off, const std::byte* p, size_t k) { std::memcpy(dst + off, p, k); };
    consume = &copy;
  }
  size_t handed = 0;
  while (!recv_.complete() && handed < max) {
    Chunk chunk = chunkAt(recv_.moved(), recv_.bytes());
    const bool alone = dst != nullptr && chunk.bytes >= kDirectReadBytes;
    if (!headerSeen_) {
      Result<bool> read = readHeader(chunk, alone);
      if (!read) return read.status();
      if (!*read) {
        TRN_TRY(starved(chunk.stream, sizeof(FrameHeader)));
        break;
      }
    }
    size_t want = std::min<uint64_t>(max - handed, chunk.offset + chunk.bytes - recv_.moved());
    size_t n = alone ? link_->readInto(chunk.stream, dst + recv_.moved(), want)
                     : handOut(chunk.stream, want, *consume);
    if (n == 0) {
      TRN_TRY(starved(chunk.stream, 1));
      break;
    }
    handed += n;
    recv_.advance(n);
    if (recv_.moved() == chunk.offset + chunk.bytes) headerSeen_ = false;
  }
  return handed;
}

Status TcpConnection::starved(size_t s, size_t need) {
  if (link_->failed()) return link_->failure();
  // EOF is recorded after the last byte was published: read what is there once more.
  if (!link_->atEof(s) || link_->readable(s, need).bytes() >= need) return Status::ok();
  return Status(Code::kRemoteError,
                fmt::format("tcp: connection to rank {} ({}) closed: end of file, with {} of {} "
                            "bytes of message tag {:#x} still to come",
                            peer(), link_->name(s), recv_.left(), recv_.bytes(), recv_.tag()),
                peer());
}

Status TcpConnection::checkPeer() {
  TRN_TRY(link_->probe());  // a reset or end of file on a socket we are not reading now
  if (!recv_.complete()) {
    Chunk chunk = chunkAt(recv_.moved(), recv_.bytes());
    TRN_TRY(starved(chunk.stream, headerSeen_ ? 1 : sizeof(FrameHeader)));
  }
  return link_->liveness();  // the link's failure, or a liveness timeout
}

// ---- waiting (transports/core/waiting.h) ----

void TcpConnection::wakeFds(std::vector<int>& fds) const {
  fds.push_back(link_->wakeFd());
  // Only the socket the current message continues on: bytes of a later message waiting in
  // another would keep poll(2) returning at once.
  if (recv_.complete()) return;
  if (int fd = link_->socketFd(chunkAt(recv_.moved(), recv_.bytes()).stream); fd >= 0) {
    fds.push_back(fd);
  }
}

void TcpConnection::woke() { link_->wokeUp(); }

void TcpConnection::armDoorbell() {
  if (!recv_.complete()) link_->watch(chunkAt(recv_.moved(), recv_.bytes()).stream);
}

}  // namespace trnccl::transport::tcp
