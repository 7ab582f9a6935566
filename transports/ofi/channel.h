// One peer's half of an ofi endpoint: the send and receive state of one connection (wire.h
// for the message format). Owned by the Endpoint, driven under its lock.
//
// Sending copies each offered piece into a bounce ring (sendRingBytes, allocated on first use)
// and posts it with fi_tsend at once; sendSome() takes bytes while the ring has room, so a
// sender can hand over a ring's worth before the peer receives anything. The first piece of a
// message starts with its header (wire.h kLeads), so a message up to the piece size is one
// send. The source buffer is never needed after sendSome() returns. Ring space frees as send
// completions arrive, in order.
// sendDone() still waits for every completion of the connection: a provider with manual
// progress moves bytes only while this rank polls, and the executor polls until sendDone().
// Pieces of at least zcopyBytes, and pieces of any size inside a buffer registered with the
// communicator (trncclCommRegister), skip the ring: fi_tsend reads the caller's buffer in
// place (allowed, since the source may be read until sendDone()); such a message's header goes
// from the ring as the first part of its first piece (fi_tsendv, one message) where the
// provider gathers (iov_limit of 2 or more), else alone, as a piece of its own, ahead of them.
// Over the native tcp provider every piece from 64 KiB goes so by default (provider.h
// zeroCopyBytes). Pieces read in place take no ring room: up to kMaxPieces of them may be in
// flight. A provider that does not ask
// for local registration gets no descriptor. One that does (FI_MR_LOCAL, or
// TRNCCL_OFI_MR_LOCAL=1) gets the descriptor of the endpoint's cached registration
// (mr_cache.h) when the piece is device memory or registered host memory, pinned until the
// piece's send completes or fails; another host piece, or one the full cache cannot take, is
// copied through the (registered) ring like a small piece.
//
// A message of at most inlineBytes() (wire.h) skips both: sendSome() copies it into its header
// slot, and the header goes once the whole message was offered, as one message. When header
// and payload fit the provider's inject size (64 bytes over tcp;ofi_rxm, 4 KiB over shm) it
// goes with fi_tinject: no send completion to read (over tcp, each one costs a write and a read
// of the provider's signal descriptor and an epoll_wait), the slot is free again at once and
// sendDone() is true without reading the queue. A message the provider accepted but could not
// write to its socket yet (only behind a full socket) moves at the next read of the queue: the
// executor's, or the liveness thread's at the latest.
//
// Receiving pre-posts kRecvHeaders header receives (a slot of headerSlotBytes each) at setup
// and, from the first beginRecv() of a message too large to come inline on, `recvSlots` data
// receives of pieceBytes + kHeaderBytes each; completed slots are handed to the consumer in
// sequence order, straight out of the slot (after the header, in a message's first piece), and
// reposted for the sequence `recvSlots` further on once consumed. An inline message is handed
// out of its header slot, which is reposted once it is consumed.
// Messages above placeBytes (over the native tcp provider 256 KiB by default, provider.h
// placeBytes; 0: none) travel as pieces of a stream of their own (wire.h WireKind::kPlaced, its
// own sequence), whose receives are posted only for pieces that surely belong to the message
// being received (each piece carries at most pieceBytes: while the bytes handed and those the
// posted pieces may carry fall short of its size, the next piece is its own), at the first
// recvSome/recvInto and as pieces arrive; a piece that comes earlier waits in the provider (net:
// in its socket). A receiver that only copies (recvInto) gets each such piece straight into its
// destination, posted once the pieces before it arrived (so its offset is known; a first
// piece's header goes to its slot, fi_trecvv); one that consumes gets the stream's own slots.
// Session 17 (README.md): the slot's copy was ~90 us of a 2 MiB all-reduce; smaller messages
// keep the slots posted ahead, which let a piece land while the receiver still works.
//
// Liveness (transports/core/liveness.h): every receive completion touches heard(), which the
// heartbeats (heartbeat.h, on an endpoint of their own) touch too; the endpoint fails a
// channel whose link failed (fail(Status)), so its later calls report it.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "transports/core/liveness.h"
#include "transports/core/message.h"
#include "transports/core/transport.h"
#include "transports/ofi/buffer.h"
#include "transports/ofi/endpoint.h"
#include "transports/ofi/mr_cache.h"
#include "transports/ofi/wire.h"

namespace trnccl::transport::ofi {

struct ChannelConfig {
  int self = -1;
  int peer = -1;
  fi_addr_t address = FI_ADDR_UNSPEC;
  size_t pieceBytes = 0;     // largest payload of a data piece, agreed by both ranks (the
                             // first piece carries the header too)
  size_t sendRingBytes = 0;  // at least pieceBytes + kHeaderBytes
  size_t recvSlots = 0;      // data receives posted ahead
  size_t zcopyBytes = 0;     // pieces at least this large may go from the source buffer
                             // (0: never); see the header for when they may not
  size_t headerSlotBytes = kHeaderSlotBytes;  // agreed by both ranks: a header and at most
                                              // headerSlotBytes - kHeaderBytes inline
  // Messages larger than this stream (bulk(): the waker rings at every arrival); 0: every
  // message above the inline bound. Local: only this rank's waiting depends on it.
  size_t streamBytes = 0;
  // Messages larger than this (and the inline bound) travel as placed pieces: posted per
  // message, a copying receiver's (recvInto) straight into its destination (channel_recv.cc);
  // 0: none (every data piece into slots posted ahead). Agreed by both ranks; needs a provider
  // without local registration.
  size_t placeBytes = 0;
  // The communicator's registered buffers (trncclCommRegister): pieces inside one go from the
  // source buffer whatever their size. nullptr: none.
  const RegisteredMemory* registered = nullptr;
};

class Channel {
 public:
  Channel(Endpoint& endpoint, ChannelConfig config);
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Allocates the header memory and posts the header receives.
  Status start();

  Status beginSend(uint64_t tag, size_t bytes);
  Result<size_t> sendSome(const void* src, size_t bytes);
  Result<bool> sendDone();
  Status beginRecv(uint64_t tag, size_t bytes);
  Result<size_t> recvSome(size_t max, const Consumer& consume) {
    return receive(max, nullptr, &consume);
  }
  // recvSome for a receiver that copies byte k of the message to dst[k] (Connection::recvInto);
  // placed pieces may be received straight into dst (any byte of the message).
  Result<size_t> recvInto(std::byte* dst, size_t max) { return receive(max, dst, nullptr); }

  // Completion of one of this channel's operations (called by Endpoint::progress).
  void complete(Op& op, size_t bytes);
  void fail(Op& op, Status status);
  // The link failed (heartbeat.h): every later call reports `status`.
  void fail(Status status) {
    if (error_) error_ = std::move(status);
  }
  // True for the first call after the first of this channel's operations completed (the
  // endpoint then finds its connection's socket: sockets.h), false after.
  bool firstCompletion() { return !std::exchange(completed_, true); }
  // When anything last arrived from the peer (written by receive completions and heartbeats).
  LastHeard& heard() { return heard_; }

  // The current message can be offered without reading completions first: it goes inline and
  // a header slot is free (a data piece needs ring room, which completions free).
  bool roomToSend() const { return sendInline_ && headerSeq_ - headersDone_ < kSendHeaders; }
  // Sends posted or queued whose completion has not arrived.
  bool sending() const;
  // A message that streams (larger than streamBytes, or the inline bound) partly received, or
  // data pieces in flight: several, or of such a message (every one when streamBytes is 0).
  bool bulk() const {
    const size_t stream = std::max(config_.streamBytes, inlineBytes());
    const size_t inFlight = pieceSeq_ - piecesDone_;
    return (inFlight > 1 ||
            (inFlight == 1 && (config_.streamBytes == 0 || send_.bytes() > stream))) ||
           (recv_.bytes() > stream && !recv_.complete());
  }
  // The largest message that travels inside its header.
  size_t inlineBytes() const { return config_.headerSlotBytes - kHeaderBytes; }
  // Whether a message of `bytes` travels as placed pieces (ChannelConfig::placeBytes).
  bool placed(size_t bytes) const {
    return config_.placeBytes != 0 && bytes > std::max(config_.placeBytes, inlineBytes());
  }
  // Calls f(Op&) for every operation of this channel, posted or not (the endpoint cancels the
  // posted ones before it closes).
  template <typename F>
  void forEachOp(F f) {
    for (Op& op : headerOps_) f(op);
    for (Op& op : pieceOps_) f(op);
    for (Op& op : recvHeaderOps_) f(op);
    for (Op& op : slotOps_) f(op);
  }
  const Status& error() const { return error_; }
  int peer() const { return config_.peer; }
  size_t bufferBytes() const { return config_.sendRingBytes; }

 private:
  static constexpr uint32_t kSendHeaders = 16;
  static constexpr uint32_t kRecvHeaders = 16;
  static constexpr uint32_t kMaxPieces = 64;  // data sends in flight
  static constexpr size_t kNotArrived = SIZE_MAX;

  struct Piece {
    size_t footprint = 0;  // ring bytes this piece holds (its bytes plus any skipped tail)
    bool done = false;
    MrCache::Entry* registration = nullptr;  // pinned while a zero-copy send is in flight
  };

  // The current outgoing message's header.
  Header header(uint32_t flags) const;
  // Sends it with fi_tinject when the provider takes it (no completion), else posts it.
  Status postHeader();
  // The header in slot `index` left (completion, or injected): retires slots in order.
  void headerSent(uint32_t index);
  // Copies the next bytes of an inline message into its header slot (0: no slot free yet) and
  // posts the header once the message is complete.
  Result<size_t> copyInline(const void* src, size_t bytes);
  Result<size_t> consumeInline(size_t max, std::byte* into, const Consumer* consume);
  // recvSome (into null) or recvInto (consume null).
  Result<size_t> receive(size_t max, std::byte* into, const Consumer* consume);
  void hand(std::byte* into, const Consumer* consume, const std::byte* data, size_t n);
  // True when a piece of `bytes` at `src` may be read in place (before any registration).
  bool inPlace(const std::byte* src, size_t bytes) const;
  // Points the piece's op at `src` when the piece may go zero-copy; false: copy it.
  Result<bool> prepareZeroCopy(uint32_t index, const std::byte* src, size_t bytes);
  void releaseRegistration(Piece& piece);
  Status ensureSendRing();
  // Reserves up to `want` contiguous ring bytes; returns the offset and sets `got` (0: no room).
  size_t reserve(size_t want, size_t& got);
  Status postRecvHeader(uint32_t slot, uint64_t seq);
  // Posts piece `seq` into `slot`, or with `place`, its `bytes` of payload there (a first
  // piece's header still into the slot).
  Status postRecvData(uint32_t slot, uint64_t seq, std::byte* place = nullptr, size_t bytes = 0);
  // Placed stream: posts what surely belongs to the current message (channel_recv.cc).
  Status postPieces(std::byte* into);
  // The current piece, in `slot`, was handed out.
  Status retirePiece(uint32_t slot);
  // The slot of the current stream's piece `seq`: stream s has slots [s, s + 1) * recvSlots.
  uint32_t slotOf(uint64_t seq) const {
    return static_cast<uint32_t>(stream_ * config_.recvSlots + seq % config_.recvSlots);
  }
  Status ensureRecvSlots(int stream);
  // Checks the current incoming message's header once it arrived: in its header slot (inline)
  // or at the start of the next data slot.
  Status checkHeader();
  Status checkLeadingPiece();
  // The header at `at` (`arrived` bytes) for the current message, sent with `flags`.
  Status checkFields(const std::byte* at, size_t arrived, uint32_t flags);
  // Fails when the stream not expected holds the current message next (see wire.h).
  Status crossCheck(int expected);  // -1: inline, else the stream
  Status mismatch(const Header& header) const;
  std::byte* headerMemory(uint32_t index) const;
  size_t slotStride() const { return config_.pieceBytes + kHeaderBytes; }
  std::byte* slotMemory(uint32_t slot) const {
    return slots_[slot / config_.recvSlots].data() + (slot % config_.recvSlots) * slotStride();
  }

  Endpoint& endpoint_;
  const ChannelConfig config_;
  Status error_;
  bool completed_ = false;  // firstCompletion() was true once
  // Slots of headerSlotBytes: kSendHeaders outgoing, kRecvHeaders incoming.
  RegisteredBuffer headers_;
  LastHeard heard_;

  // Sending.
  MessageState send_;
  bool sendInline_ = false;  // the message goes inside its header
  bool headerPending_ = false;
  uint64_t sendMessages_ = 0;  // non-empty messages begun, ever (Header::message)
  uint64_t headerSeq_ = 0;     // headers sent, ever
  uint64_t headersDone_ = 0;
  std::array<bool, kSendHeaders> headerDone_{};
  std::array<Op, kSendHeaders> headerOps_{};
  RegisteredBuffer ring_;
  uint64_t ringHead_ = 0;                 // bytes reserved, ever
  uint64_t ringTail_ = 0;                 // bytes freed, ever
  uint64_t pieceSeq_ = 0;                 // data pieces sent, ever
  bool sendPlaced_ = false;               // the message's pieces are placed (kPlaced)
  std::array<uint64_t, 2> sendStream_{};  // pieces sent per stream (kData, kPlaced), ever
  uint64_t piecesDone_ = 0;
  std::array<Piece, kMaxPieces> pieces_{};
  std::array<Op, kMaxPieces> pieceOps_{};

  // Receiving.
  MessageState recv_;
  bool headerChecked_ = true;
  bool recvInline_ = false;     // the checked header slot holds the message
  uint64_t recvMessages_ = 0;   // non-empty messages begun, ever
  uint64_t recvHeaderSeq_ = 0;  // next header expected
  std::array<Op, kRecvHeaders> recvHeaderOps_{};
  std::array<size_t, kRecvHeaders> recvHeaderBytes_{};  // SIZE_MAX: not arrived
  // Per stream: 0, kData, with recvSlots slots posted ahead; 1, kPlaced, posted per message.
  std::array<RegisteredBuffer, 2> slots_;
  std::array<uint64_t, 2> nextPiece_{};  // next piece expected
  std::array<uint64_t, 2> postedSeq_{};  // next piece not posted yet
  int stream_ = 0;                       // the current incoming message's
  uint64_t firstSeq_ = 0;                // the current message's first piece
  size_t slotConsumed_ = 0;              // bytes of the current slot handed out
  std::vector<Op> slotOps_;              // 2 x recvSlots, like the two below
  std::vector<size_t> slotBytes_;        // SIZE_MAX: not arrived
  std::vector<std::byte*> slotPlace_;    // where the slot's piece goes in place; null: the slot
};

}  // namespace trnccl::transport::ofi
