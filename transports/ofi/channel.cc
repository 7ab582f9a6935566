#include "transports/ofi/channel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "transports/ofi/testing.h"

namespace trnccl::transport::ofi {

Channel::Channel(Endpoint& endpoint, ChannelConfig config)
    : endpoint_(endpoint),
      config_(config),
      send_("ofi", MessageState::Direction::kSend, config.peer),
      recv_("ofi", MessageState::Direction::kRecv, config.peer) {
  auto init = [this](Op& op, OpKind kind, uint32_t index) {
    op.channel = this;
    op.kind = kind;
    op.index = index;
  };
  for (uint32_t i = 0; i < kSendHeaders; ++i) init(headerOps_[i], OpKind::kSendHeader, i);
  for (uint32_t i = 0; i < kMaxPieces; ++i) init(pieceOps_[i], OpKind::kSendData, i);
  for (uint32_t i = 0; i < kRecvHeaders; ++i) init(recvHeaderOps_[i], OpKind::kRecvHeader, i);
  slotOps_.resize(2 * config_.recvSlots);
  for (uint32_t i = 0; i < slotOps_.size(); ++i) init(slotOps_[i], OpKind::kRecvData, i);
  slotBytes_.assign(slotOps_.size(), kNotArrived);
  slotPlace_.assign(slotOps_.size(), nullptr);
  recvHeaderBytes_.fill(kNotArrived);
}

std::byte* Channel::headerMemory(uint32_t index) const {
  return headers_.data() + size_t{index} * config_.headerSlotBytes;
}

Status Channel::start() {
  Result<RegisteredBuffer> headers = RegisteredBuffer::allocate(
      endpoint_.registrationDomain(), (kSendHeaders + kRecvHeaders) * config_.headerSlotBytes);
  if (!headers) return headers.status();
  headers_ = std::move(*headers);
  for (uint32_t slot = 0; slot < kRecvHeaders; ++slot) TRN_TRY(postRecvHeader(slot, slot));
  heard_.touch();
  return Status::ok();
}

// ---- sending ----

Status Channel::beginSend(uint64_t tag, size_t bytes) {
  TRN_TRY(error_);
  TRN_TRY(send_.begin(tag, bytes));
  sendInline_ = bytes != 0 && bytes <= inlineBytes();
  sendPlaced_ = placed(bytes);
  headerPending_ = bytes != 0;
  sendMessages_ += bytes != 0 ? 1 : 0;
  return Status::ok();
}

Header Channel::header(uint32_t flags) const {
  Header header;
  header.flags = flags;
  header.tag = send_.tag();
  header.bytes = send_.bytes();
  header.message = sendMessages_ - 1;
  return header;
}

// The header of an inline message, with its payload.
Status Channel::postHeader() {
  if (headerSeq_ - headersDone_ >= kSendHeaders) return Status::ok();  // still pending
  auto index = static_cast<uint32_t>(headerSeq_ % kSendHeaders);
  const Header inlined = header(kInline);
  std::memcpy(headerMemory(index), &inlined, kHeaderBytes);
  Op& op = headerOps_[index];
  op.buffer = headerMemory(index);
  op.bytes = kHeaderBytes + send_.bytes();
  testing::counters().add(testing::Event::kInlineMessages);
  op.desc = headers_.desc();
  op.address = config_.address;
  op.tag = wireTag(WireKind::kHeader, config_.self, headerSeq_);
  ++headerSeq_;
  headerPending_ = false;
  Result<bool> injected = endpoint_.inject(op);
  if (!injected) return injected.status();
  if (*injected) {  // no completion will come: the slot is free again
    testing::counters().add(testing::Event::kInjectedMessages);
    headerSent(index);
    return Status::ok();
  }
  headerDone_[index] = false;
  return endpoint_.post(op);
}

void Channel::headerSent(uint32_t index) {
  headerDone_[index] = true;
  while (headersDone_ < headerSeq_ && headerDone_[headersDone_ % kSendHeaders]) {
    headerDone_[headersDone_ % kSendHeaders] = false;
    ++headersDone_;
  }
}

Status Channel::ensureSendRing() {
  if (ring_) return Status::ok();
  Result<RegisteredBuffer> ring =
      RegisteredBuffer::allocate(endpoint_.registrationDomain(), config_.sendRingBytes);
  if (!ring) return ring.status();
  ring_ = std::move(*ring);
  return Status::ok();
}

size_t Channel::reserve(size_t want, size_t& got) {
  const size_t capacity = config_.sendRingBytes;
  if (ringHead_ == ringTail_) {
    // Empty: start again at the beginning, so a piece never has to skip the tail.
    ringHead_ = ringTail_ = (ringHead_ + capacity - 1) / capacity * capacity;
  }
  size_t free = capacity - (ringHead_ - ringTail_);
  size_t position = ringHead_ % capacity;
  size_t toEnd = capacity - position;
  // Wait for a fair amount of room rather than dribbling small pieces into a full ring.
  size_t useful = std::min(want, capacity / 8);
  Piece& piece = pieces_[pieceSeq_ % kMaxPieces];
  if (std::min(free, toEnd) >= useful) {
    got = std::min({want, free, toEnd});
    piece.footprint = got;
    ringHead_ += got;
    return position;
  }
  if (toEnd < useful && free >= toEnd + useful) {
    got = std::min(want, free - toEnd);
    piece.footprint = toEnd + got;
    ringHead_ += piece.footprint;
    return 0;
  }
  got = 0;
  return 0;
}

Result<size_t> Channel::sendSome(const void* src, size_t bytes) {
  TRN_TRY(error_);
  size_t offered = send_.clamp(bytes);
  if (offered == 0) return size_t{0};
  if (sendInline_) return copyInline(src, offered);
  TRN_TRY(ensureSendRing());
  const auto* from = static_cast<const std::byte*>(src);
  size_t taken = 0;
  while (taken < offered && pieceSeq_ - piecesDone_ < kMaxPieces) {
    // The first piece starts with the header. One read in place has it as a first part from
    // the ring where the provider gathers (fi_tsendv), else follows the header alone.
    const size_t lead = headerPending_ ? kHeaderBytes : 0;
    size_t want = std::min(offered - taken, config_.pieceBytes);
    if (lead != 0 && !endpoint_.gathers() && inPlace(from + taken, want)) want = 0;
    auto index = static_cast<uint32_t>(pieceSeq_ % kMaxPieces);
    Op& op = pieceOps_[index];
    op.parts = 0;
    size_t got = want;
    Result<bool> zeroCopy =
        want == 0 ? Result<bool>(false) : prepareZeroCopy(index, from + taken, want);
    if (!zeroCopy) return zeroCopy.status();
    if (*zeroCopy && lead != 0) {
      size_t room = 0;
      const size_t offset = reserve(lead, room);
      if (room == 0) {
        releaseRegistration(pieces_[index]);
        break;
      }
      std::byte* at = ring_.data() + offset;
      const Header leads = header(kLeads);
      std::memcpy(at, &leads, kHeaderBytes);
      testing::counters().add(testing::Event::kLeadingHeaders);
      op.parts = 2;
      op.iov = {iovec{at, lead}, iovec{const_cast<std::byte*>(from + taken), want}};
      op.descs = {ring_.desc(), op.desc};
      headerPending_ = false;
    }
    if (!*zeroCopy) {
      size_t offset = reserve(lead + want, got);
      if (got == 0) break;
      std::byte* at = ring_.data() + offset;
      if (lead != 0) {
        const Header leads = header(kLeads);
        std::memcpy(at, &leads, kHeaderBytes);
        if (got > lead) testing::counters().add(testing::Event::kLeadingHeaders);
      }
      got -= lead;
      std::memcpy(at + lead, from + taken, got);
      op.buffer = at;
      op.desc = ring_.desc();
      headerPending_ = false;
    }
    if (got != 0) {
      testing::counters().add(*zeroCopy ? testing::Event::kZeroCopyPieces
                                        : testing::Event::kCopiedPieces);
    }
    op.bytes = lead + got;
    op.address = config_.address;
    op.tag = wireTag(sendPlaced_ ? WireKind::kPlaced : WireKind::kData, config_.self,
                     sendStream_[sendPlaced_ ? 1 : 0]++);
    pieces_[index].done = false;
    ++pieceSeq_;
    taken += got;
    send_.advance(got);
    Status posted = endpoint_.post(op);
    if (!posted) {
      releaseRegistration(pieces_[index]);  // never posted: no completion will unpin it
      return posted;
    }
  }
  return taken;
}

Result<size_t> Channel::copyInline(const void* src, size_t bytes) {
  if (headerSeq_ - headersDone_ >= kSendHeaders) return size_t{0};  // every slot in flight
  auto index = static_cast<uint32_t>(headerSeq_ % kSendHeaders);
  std::memcpy(headerMemory(index) + kHeaderBytes + send_.moved(), src, bytes);
  send_.advance(bytes);
  if (send_.complete()) TRN_TRY(postHeader());
  return bytes;
}

Result<bool> Channel::sendDone() {
  TRN_TRY(error_);
  if (sendInline_ && headerPending_ && send_.complete()) TRN_TRY(postHeader());
  // Done means completed: zero-copy pieces read the source until then, and with manual
  // progress nothing leaves this rank unless it keeps polling.
  return send_.complete() && !headerPending_ && !sending();
}

bool Channel::sending() const { return headersDone_ < headerSeq_ || piecesDone_ < pieceSeq_; }

// ---- completions ----

void Channel::complete(Op& op, size_t bytes) {
  switch (op.kind) {
    case OpKind::kSendHeader:
      headerSent(op.index);
      break;
    case OpKind::kSendData:
      // The provider is done with the source: unpin at once, not when the piece retires.
      releaseRegistration(pieces_[op.index]);
      pieces_[op.index].done = true;
      while (piecesDone_ < pieceSeq_ && pieces_[piecesDone_ % kMaxPieces].done) {
        Piece& piece = pieces_[piecesDone_ % kMaxPieces];
        ringTail_ += piece.footprint;
        piece.done = false;
        ++piecesDone_;
      }
      break;
    case OpKind::kRecvHeader:
      heard_.touch();
      recvHeaderBytes_[op.index] = bytes;
      break;
    case OpKind::kRecvData:
      heard_.touch();
      slotBytes_[op.index] = bytes;
      break;
  }
}

void Channel::fail(Op& op, Status status) {
  // A failed send completes too (or was never posted): its registration is free to evict.
  if (op.kind == OpKind::kSendData) releaseRegistration(pieces_[op.index]);
  if (error_) error_ = std::move(status);
}

}  // namespace trnccl::transport::ofi
