#include "transports/shm/shm_connection.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transports/shm/testing.h"

namespace trnccl::transport::shm {
namespace {

constexpr size_t kScratchBytes = 256 * 1024;  // bound of one process_vm_readv piece

uint64_t roundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

// A pidfd turns readable when the process exits, zombie or not, and is immune to pid reuse.
int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

void countRecord(RecordKind kind) {
  using testing::Event;
  testing::counters().add(kind == RecordKind::kInline    ? Event::kInlineRecords
                          : kind == RecordKind::kPointer ? Event::kPointerDescriptors
                          : kind == RecordKind::kArena   ? Event::kArenaDescriptors
                                                         : Event::kCmaDescriptors);
}

}  // namespace

ShmConnection::ShmConnection(PeerLink link)
    : link_(std::move(link)),
      peerBell_(&link_.remote->header()->bell),
      send_("shm", MessageState::Direction::kSend, link_.peer),
      recv_("shm", MessageState::Direction::kRecv, link_.peer),
      selfPid_(::getpid()),
      outCtrl_(link_.remote->ctrl(link_.outSlot)),
      outData_(link_.remote->data(link_.outSlot)),
      outCap_(link_.remote->fifoBytes()),
      inCtrl_(link_.own->ctrl(link_.inSlot)),
      inData_(link_.own->data(link_.inSlot)),
      inCap_(link_.own->fifoBytes()),
      outLlThreshold_(outCtrl_->llThreshold),
      inLlThreshold_(inCtrl_->llThreshold),
      llOut_(llArea(outData_, outCap_, outLlThreshold_), peerBell_),
      llIn_(llArea(inData_, inCap_, inLlThreshold_), peerBell_, link_.peer),
      outSync_(link_.own->header()->commHash, link_.peer, link_.outSlot),
      inSync_(link_.own->header()->commHash, link_.self, link_.inSlot) {
  if (!link_.sameProcess) pidfd_.reset(openPidfd(link_.peerPid));
  // The LL areas take the end of each FIFO's data region; the record rings keep the rest.
  LlArea outLl = llArea(outData_, outCap_, outLlThreshold_);
  LlArea inLl = llArea(inData_, inCap_, inLlThreshold_);
  outCap_ -= llAreaBytes(outLlThreshold_, outCap_);
  inCap_ -= llAreaBytes(inLlThreshold_, inCap_);
  outLlThreshold_ = static_cast<uint32_t>(std::min<uint64_t>(outLlThreshold_, outLl.maxBytes()));
  inLlThreshold_ = static_cast<uint32_t>(std::min<uint64_t>(inLlThreshold_, inLl.maxBytes()));
  // Only this rank writes its outbound FIFO and LL lines, and it has published nothing yet.
  // (The inbound ones were touched when this rank created its segment.)
  touchPages(outData_, outCap_);
  touchPages(reinterpret_cast<std::byte*>(outLl.lines), outLl.count * sizeof(uint64_t));
}

const char* ShmConnection::sendMode() const {
  if (link_.zcopyBytes == 0) return "copy through FIFO";
  if (link_.sameProcess) return "zero-copy: same-process pointers";
  bool arena = link_.peerCaps & kCapArenaMap;
  bool cma = link_.peerCaps & kCapCma;
  if (arena && cma) return "zero-copy: device arena map, host CMA";
  if (arena) return "zero-copy: device arena map, host copy through FIFO";
  if (cma) return "zero-copy: CMA";
  return "copy through FIFO (peer cannot read this process)";
}

// ---- sending ----

Status ShmConnection::beginSend(uint64_t tag, size_t bytes) {
  TRN_TRY(send_.begin(tag, bytes));
  llSend_ = bytes != 0 && bytes <= outLlThreshold_;
  beginPending_ = bytes != 0 && !llSend_;
  if (bytes != 0) ++sendIndex_;
  if (llSend_) llOut_.begin(tag, bytes, sendIndex_);
  return Status::ok();
}

bool ShmConnection::describe(const void* src, size_t bytes, bool allowCma, Record& record) const {
  record.bytes = bytes;
  record.a = reinterpret_cast<uintptr_t>(src);
  if (link_.sameProcess) {
    record.kind = static_cast<uint32_t>(RecordKind::kPointer);
    return true;
  }
  if ((link_.peerCaps & kCapArenaMap) && link_.locate) {
    std::optional<MemoryLocation> where = link_.locate(src);
    if (where && where->pid == selfPid_ && where->offset <= where->arenaBytes &&
        bytes <= where->arenaBytes - where->offset) {
      record.kind = static_cast<uint32_t>(RecordKind::kArena);
      record.fd = where->arenaFd;
      record.a = where->offset;
      record.b = where->arenaBytes;
      return true;
    }
  }
  if (allowCma && (link_.peerCaps & kCapCma)) {
    record.kind = static_cast<uint32_t>(RecordKind::kCma);
    return true;
  }
  return false;
}

void ShmConnection::copyIn(uint64_t position, const std::byte* src, size_t bytes) {
  size_t offset = position % outCap_;
  size_t first = std::min<size_t>(bytes, outCap_ - offset);
  std::memcpy(outData_ + offset, src, first);
  if (bytes > first) std::memcpy(outData_, src + first, bytes - first);
}

void ShmConnection::writeRecord(const Record& record) {
  // Positions are multiples of kRecordBytes and the ring a multiple of 64: never wraps.
  std::memcpy(outData_ + head_ % outCap_, &record, kRecordBytes);
  head_ += kRecordBytes;
}

void ShmConnection::publishHead() {
  outSync_.released();  // before the store: the peer may act on it at once (tsan_sync.h)
  outCtrl_->head.store(head_, std::memory_order_release);
  Doorbell::ring(peerBell_);
}

Result<size_t> ShmConnection::sendSome(const void* src, size_t bytes) {
  size_t offered = send_.clamp(bytes);
  if (offered == 0) return size_t{0};
  if (llSend_) {
    size_t taken = llOut_.write(static_cast<const std::byte*>(src), offered, send_.moved());
    send_.advance(taken);
    return taken;
  }
  uint64_t tail = outCtrl_->tail.load(std::memory_order_acquire);
  outSync_.acquired();
  uint64_t room = outCap_ - (head_ - tail);
  uint64_t reserve = (beginPending_ ? kRecordBytes : 0) + kRecordBytes;
  if (room <= reserve) {
    room = roomAfterAskingForRing();
    if (room <= reserve) return size_t{0};
  }

  Record record;
  size_t taken = offered;
  // A piece goes by descriptor from the zero-copy threshold up, by CMA from kCmaMinBytes; a
  // registered one (the user keeps it in place until deregistering) from the registered floor,
  // by CMA too (zero_copy.h: kRegisteredMinBytes, and why a floor), which only a threshold
  // lowered below its default lowers.
  const size_t registeredFloor =
      link_.zcopyBytes < kDefaultZcopyBytes ? link_.zcopyBytes : kRegisteredMinBytes;
  const bool small = offered < std::max(link_.zcopyBytes, kCmaMinBytes);
  const bool registered = link_.zcopyBytes != 0 && small && offered >= registeredFloor &&
                          link_.registered != nullptr && link_.registered->covers(src, offered);
  bool byDescriptor = link_.zcopyBytes != 0 && (offered >= link_.zcopyBytes || registered) &&
                      describe(src, offered, registered || !small, record);
  if (byDescriptor && registered &&
      (offered < link_.zcopyBytes || record.kind == static_cast<uint32_t>(RecordKind::kCma))) {
    testing::counters().add(testing::Event::kRegisteredPieces);
  }
  if (!byDescriptor) {
    // Wait for a fair amount of room rather than dribbling tiny records into a full ring.
    const uint64_t fair = std::min<uint64_t>(offered, outCap_ / 16);
    taken = std::min<uint64_t>(offered, room - reserve);
    if (taken < fair) {
      room = roomAfterAskingForRing();  // tail only grows: still more than `reserve`
      taken = std::min<uint64_t>(offered, room - reserve);
      if (taken < fair) return size_t{0};
    }
    record.kind = static_cast<uint32_t>(RecordKind::kInline);
    record.bytes = taken;
  }
  if (beginPending_) {
    Record begin;
    begin.kind = static_cast<uint32_t>(RecordKind::kBegin);
    begin.bytes = send_.bytes();
    begin.a = send_.tag();
    begin.b = sendIndex_;
    writeRecord(begin);
    beginPending_ = false;
  }
  writeRecord(record);
  if (byDescriptor) {
    ++issued_;
  } else {
    copyIn(head_, static_cast<const std::byte*>(src), taken);
    head_ += roundUp(taken, kRecordBytes);
  }
  publishHead();
  send_.advance(taken);
  ringNoLongerWanted();
  return taken;
}

uint64_t ShmConnection::roomAfterAskingForRing() {
  // Room freed before the request is seen by this load, room freed after it rings: both sides'
  // store-then-load pairs are sequentially consistent (publishTail).
  wantRing();
  uint64_t tail = outCtrl_->tail.load(std::memory_order_seq_cst);
  outSync_.acquired();
  return outCap_ - (head_ - tail);
}

void ShmConnection::wantRing() {
  if (ringWanted_) return;
  outCtrl_->ringWanted.store(1, std::memory_order_seq_cst);
  ringWanted_ = true;
}

void ShmConnection::ringNoLongerWanted() {
  if (!ringWanted_) return;
  outCtrl_->ringWanted.store(0, std::memory_order_relaxed);
  ringWanted_ = false;
}

Result<bool> ShmConnection::sendDone() {
  if (!send_.complete()) return false;
  // Descriptors point into the caller's buffer: done only once the peer has read them all.
  bool acked = outCtrl_->ack.load(std::memory_order_acquire) >= issued_;
  if (!acked) {
    wantRing();  // then look again, as sendSome does for room
    acked = outCtrl_->ack.load(std::memory_order_seq_cst) >= issued_;
  }
  outSync_.acquired();
  if (acked) ringNoLongerWanted();
  return acked;
}

// ---- receiving ----

Status ShmConnection::beginRecv(uint64_t tag, size_t bytes) {
  TRN_TRY(recv_.begin(tag, bytes));
  llRecv_ = bytes != 0 && bytes <= inLlThreshold_;
  headerSeen_ = bytes == 0 || llRecv_;
  if (bytes != 0) ++recvIndex_;
  if (llRecv_) llIn_.begin(bytes);
  return Status::ok();
}

Status ShmConnection::checkBegin(const Record& record) const {
  std::string problem = beginRecordProblem(record, expected());
  if (problem.empty()) return Status::ok();
  return Status(Code::kInternalError, fmt::format("shm: from rank {}: {}", link_.peer, problem),
                link_.peer);
}

Status ShmConnection::checkData(const Record& record) const {
  std::string problem = dataRecordProblem(record, expected());
  if (problem.empty()) return Status::ok();
  return Status(Code::kInternalError, fmt::format("shm: from rank {}: {}", link_.peer, problem),
                link_.peer);
}

// Reads the record at tail_, if one was published. Returns whether one was read.
Result<bool> ShmConnection::nextRecord() {
  uint64_t head = inCtrl_->head.load(std::memory_order_acquire);
  inSync_.acquired();
  if (head - tail_ < kRecordBytes) return false;
  Record record;
  std::memcpy(&record, inData_ + tail_ % inCap_, kRecordBytes);
  if (!headerSeen_) {
    TRN_TRY(checkBegin(record));
    headerSeen_ = true;
  } else {
    TRN_TRY(checkData(record));
    cur_ = Current{static_cast<RecordKind>(record.kind), record.bytes, 0, record};
  }
  // The slots of a message's records are released with its bytes (consumeCurrent): one
  // doorbell ring per piece consumed, not one per record read as well.
  tail_ += kRecordBytes;
  return true;
}

void ShmConnection::publishTail(bool acknowledge) {
  inSync_.released();  // before the stores: the sender may reuse its buffer at once
  inCtrl_->tail.store(tail_, std::memory_order_seq_cst);
  if (acknowledge) inCtrl_->ack.store(++acked_, std::memory_order_seq_cst);
  // Only a sender that waits for room or acknowledgements asked for a ring (wantRing).
  if (inCtrl_->ringWanted.load(std::memory_order_seq_cst) != 0) Doorbell::ring(peerBell_);
}

Result<const std::byte*> ShmConnection::descriptorBytes(size_t bytes) {
  const Record& record = cur_.record;
  switch (cur_.kind) {
    case RecordKind::kPointer:
      return reinterpret_cast<const std::byte*>(record.a) + cur_.consumed;
    case RecordKind::kArena: {
      Result<const std::byte*> base = link_.arenas->map(link_.peerPid, record.fd, record.b);
      if (!base) return base.status();
      return *base + record.a + cur_.consumed;
    }
    case RecordKind::kCma: {
      if (scratch_.empty()) scratch_.resize(kScratchBytes);
      TRN_TRY(cmaRead(link_.peerPid, record.a + cur_.consumed, scratch_.data(), bytes, link_.peer));
      return static_cast<const std::byte*>(scratch_.data());
    }
    default:
      return internalError("shm: record kind {} is not a descriptor", recordKindName(record.kind));
  }
}

Result<size_t> ShmConnection::consumeCurrent(size_t max, const Consumer& consume) {
  size_t n = std::min<uint64_t>(cur_.remaining, max);
  if (cur_.kind == RecordKind::kInline) {
    size_t offset = tail_ % inCap_;
    size_t first = std::min<size_t>(n, inCap_ - offset);
    consume(recv_.moved(), inData_ + offset, first);
    if (n > first) consume(recv_.moved() + first, inData_, n - first);
    tail_ += n;
  } else {
    if (cur_.kind == RecordKind::kCma) n = std::min(n, kScratchBytes);
    Result<const std::byte*> bytes = descriptorBytes(n);
    if (!bytes) return bytes.status();
    consume(recv_.moved(), *bytes, n);
  }
  cur_.remaining -= n;
  cur_.consumed += n;
  recv_.advance(n);
  const bool inlined = cur_.kind == RecordKind::kInline, whole = cur_.remaining == 0;
  if (whole) {
    countRecord(cur_.kind);
    if (inlined) tail_ = roundUp(tail_, kRecordBytes);
  }
  // An inline piece frees its room at once; a descriptor's records are released with its
  // acknowledgement, after its last byte (one store each and one ring for both).
  if (inlined || whole) publishTail(!inlined && whole);
  return n;
}

Result<size_t> ShmConnection::recvInto(std::byte* dst, size_t max) {
  if (!llRecv_) return Connection::recvInto(dst, max);
  if (recv_.complete()) return size_t{0};
  // Most polls find nothing: two loads (the message's last line, the FIFO's head), no Result
  // built by the reader, no call unless there is idle work or a record on the other path.
  if (!llIn_.lastLineReady()) {
    if (llIn_.idleWork()) TRN_TRY(llIn_.idle(recv_.tag()));
    if (!llIn_.headerSeen() && inCtrl_->head.load(std::memory_order_relaxed) != tail_) {
      TRN_TRY(checkOtherPath());
    }
    return size_t{0};
  }
  Result<size_t> n = llIn_.readArrivedInto(dst, recv_.clamp(max), recv_.moved(), recv_.tag());
  if (!n) return n;
  recv_.advance(*n);
  if (*n == 0 && !llIn_.headerSeen()) TRN_TRY(checkOtherPath());
  return n;
}

Result<size_t> ShmConnection::recvSome(size_t max, const Consumer& consume) {
  if (llRecv_) {
    if (recv_.complete()) return size_t{0};
    Result<size_t> n = llIn_.read(recv_.clamp(max), recv_.moved(), recv_.tag(), consume);
    if (!n) return n;
    recv_.advance(*n);
    if (*n == 0 && !llIn_.headerSeen()) TRN_TRY(checkOtherPath());
    return n;
  }
  size_t handed = 0;
  while (!recv_.complete() && handed < max) {
    if (cur_.remaining == 0) {
      Result<bool> read = nextRecord();
      if (!read) return read.status();
      if (!*read) break;
      continue;
    }
    Result<size_t> n = consumeCurrent(max - handed, consume);
    if (!n) return n.status();
    handed += *n;
  }
  if (handed == 0 && !headerSeen_) TRN_TRY(checkOtherPath());
  return handed;
}

// The sender chose the path by its message size, the receiver by its own: when they straddle
// the LL threshold the message would never arrive on the path polled. When idle before a
// message's header, look for it on the other path, so the mismatch fails like any other header
// mismatch instead of timing out.
Status ShmConnection::checkOtherPath() {
  Record record;
  if (llRecv_) {
    uint64_t head = inCtrl_->head.load(std::memory_order_acquire);
    inSync_.acquired();
    if (head - tail_ < kRecordBytes) return Status::ok();
    std::memcpy(&record, inData_ + tail_ % inCap_, kRecordBytes);
    if (record.kind != static_cast<uint32_t>(RecordKind::kBegin) || record.b != recvIndex_) {
      return Status::ok();
    }
  } else if (!llIn_.peekNext(recvIndex_, record)) {
    return Status::ok();
  }
  return checkBegin(record);
}

Status ShmConnection::checkPeer() {
  if (link_.sameProcess) return Status::ok();
  bool gone = false;
  if (pidfd_) {
    pollfd pfd{pidfd_.get(), POLLIN, 0};
    gone = ::poll(&pfd, 1, 0) > 0;
  } else {
    gone = ::kill(link_.peerPid, 0) == -1 && errno == ESRCH;
  }
  if (!gone) return Status::ok();
  return Status(Code::kRemoteError,
                fmt::format("shm: peer rank {} (pid {}) is gone", link_.peer, link_.peerPid),
                link_.peer);
}

}  // namespace trnccl::transport::shm
