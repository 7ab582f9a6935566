// The channel's receiving half (channel.h): header slots, data slots, and placed pieces received
// straight into a copying receiver's destination (ChannelConfig::placeBytes).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "transports/ofi/channel.h"
#include "transports/ofi/testing.h"

namespace trnccl::transport::ofi {

Status Channel::postRecvHeader(uint32_t slot, uint64_t seq) {
  Op& op = recvHeaderOps_[slot];
  op.buffer = headerMemory(kSendHeaders + slot);
  op.bytes = config_.headerSlotBytes;
  op.desc = headers_.desc();
  op.address = FI_ADDR_UNSPEC;  // the tag names the sender
  op.tag = wireTag(WireKind::kHeader, config_.peer, seq);
  recvHeaderBytes_[slot] = kNotArrived;
  return endpoint_.post(op);
}

Status Channel::postRecvData(uint32_t slot, uint64_t seq, std::byte* place, size_t bytes) {
  Op& op = slotOps_[slot];
  op.parts = 0;
  op.buffer = slotMemory(slot);
  op.bytes = slotStride();
  op.desc = slots_[slot / config_.recvSlots].desc();
  if (place != nullptr && seq == firstSeq_) {  // the header into the slot, the payload in place
    op.parts = 2;
    op.iov = {iovec{slotMemory(slot), kHeaderBytes}, iovec{place, bytes}};
    op.descs = {nullptr, nullptr};
  } else if (place != nullptr) {
    op.buffer = place;
    op.bytes = bytes;
    op.desc = nullptr;
  }
  op.address = FI_ADDR_UNSPEC;
  const bool placed = slot >= config_.recvSlots;
  op.tag = wireTag(placed ? WireKind::kPlaced : WireKind::kData, config_.peer, seq);
  slotBytes_[slot] = kNotArrived;
  slotPlace_[slot] = place;
  if (place != nullptr) testing::counters().add(testing::Event::kReceivedInPlace);
  return endpoint_.post(op);
}

Status Channel::ensureRecvSlots(int stream) {
  if (slots_[stream]) return Status::ok();
  Result<RegisteredBuffer> slots =
      RegisteredBuffer::allocate(endpoint_.registrationDomain(), config_.recvSlots * slotStride());
  if (!slots) return slots.status();
  slots_[stream] = std::move(*slots);
  if (stream == 1) return Status::ok();  // posted per message (postPieces)
  for (uint32_t slot = 0; slot < config_.recvSlots; ++slot) {
    TRN_TRY(postRecvData(slot, nextPiece_[0] + slot));
  }
  postedSeq_[0] = nextPiece_[0] + config_.recvSlots;
  return Status::ok();
}

Status Channel::beginRecv(uint64_t tag, size_t bytes) {
  TRN_TRY(error_);
  TRN_TRY(recv_.begin(tag, bytes));
  headerChecked_ = bytes == 0;
  recvMessages_ += bytes != 0 ? 1 : 0;
  stream_ = placed(bytes) ? 1 : 0;
  firstSeq_ = nextPiece_[stream_];
  if (bytes > inlineBytes()) TRN_TRY(ensureRecvSlots(stream_));
  return Status::ok();
}

// Placed pieces posted for the current message (nextPiece_ to postedSeq_): each carries at most
// pieceBytes of it, so while the handed bytes and what they can carry stay below its size, the
// next piece belongs to it too. Its offset is known once every earlier piece has arrived: then a
// copying receiver (`into`) gets it in place, else it waits (one piece in place at a time).
Status Channel::postPieces(std::byte* into) {
  uint64_t& posted = postedSeq_[1];
  while (posted - nextPiece_[1] < config_.recvSlots) {
    size_t covered = recv_.moved();
    bool exact = true;
    for (uint64_t seq = nextPiece_[1]; seq < posted; ++seq) {
      const size_t arrived = slotBytes_[slotOf(seq)];
      if (arrived == kNotArrived) {
        covered += config_.pieceBytes;
        exact = false;
        continue;
      }
      size_t skip = seq == firstSeq_ ? kHeaderBytes : 0;
      if (seq == nextPiece_[1] && slotConsumed_ != 0) skip = slotConsumed_;
      covered += arrived - std::min(arrived, skip);
    }
    if (covered >= recv_.bytes() || (into != nullptr && !exact)) break;
    const size_t left = std::min(config_.pieceBytes, recv_.bytes() - covered);
    const bool place = into != nullptr && (posted != firstSeq_ || endpoint_.scatters());
    TRN_TRY(postRecvData(slotOf(posted), posted, place ? into + covered : nullptr, left));
    ++posted;
  }
  return Status::ok();
}

// The piece in `slot` was handed out: repost the slot `recvSlots` pieces on, or (placed) leave
// it free for postPieces.
Status Channel::retirePiece(uint32_t slot) {
  slotConsumed_ = 0;
  const uint64_t next = ++nextPiece_[stream_];
  if (stream_ == 0) {
    ++postedSeq_[0];
    return postRecvData(slot, next + config_.recvSlots - 1);
  }
  slotBytes_[slot] = kNotArrived;
  slotPlace_[slot] = nullptr;
  return Status::ok();
}

Status Channel::checkFields(const std::byte* at, size_t arrived, uint32_t flags) {
  Header header;
  if (arrived >= kHeaderBytes) std::memcpy(&header, at, kHeaderBytes);
  const size_t payload = arrived >= kHeaderBytes ? arrived - kHeaderBytes : 0;
  if (arrived < kHeaderBytes || header.magic != kHeaderMagic || header.flags != flags ||
      (header.bytes <= inlineBytes()) != (flags == kInline) ||
      (flags == kInline ? payload != header.bytes : payload > header.bytes)) {
    return Status(Code::kInternalError,
                  fmt::format("ofi: corrupt message header from rank {}: {} bytes, magic {:#x} "
                              "(expected tag {:#x} and {} bytes)",
                              config_.peer, arrived, header.magic, recv_.tag(), recv_.bytes()),
                  config_.peer);
  }
  if (header.tag != recv_.tag() || header.bytes != recv_.bytes() ||
      header.message != recvMessages_ - 1) {
    return mismatch(header);
  }
  headerChecked_ = true;
  return Status::ok();
}

Status Channel::mismatch(const Header& header) const {
  return Status(Code::kInternalError,
                fmt::format("ofi: message #{} from rank {} has tag {:#x} and {} bytes, expected "
                            "#{} with tag {:#x} and {} bytes",
                            header.message, config_.peer, header.tag, header.bytes,
                            recvMessages_ - 1, recv_.tag(), recv_.bytes()),
                config_.peer);
}

// Looks at what the streams not expected hold next: headers, and data pieces (posted ahead;
// placed pieces never are, so a placed message expected elsewhere is found by the next message).
Status Channel::crossCheck(int expected) {
  auto check = [this](const std::byte* at, size_t arrived) -> Status {
    if (arrived == kNotArrived || arrived < kHeaderBytes) return Status::ok();
    Header header;
    std::memcpy(&header, at, kHeaderBytes);
    // Messages go in order: another stream holding this one means the sender chose another.
    if (header.magic == kHeaderMagic && header.message == recvMessages_ - 1) {
      return mismatch(header);
    }
    return Status::ok();
  };
  if (expected != -1) {
    auto slot = static_cast<uint32_t>(recvHeaderSeq_ % kRecvHeaders);
    TRN_TRY(check(headerMemory(kSendHeaders + slot), recvHeaderBytes_[slot]));
  }
  if (expected != 0 && postedSeq_[0] > nextPiece_[0]) {  // no piece arrives unposted
    auto slot = static_cast<uint32_t>(nextPiece_[0] % config_.recvSlots);
    TRN_TRY(check(slotMemory(slot), slotBytes_[slot]));
  }
  return Status::ok();
}

Status Channel::checkHeader() {
  auto slot = static_cast<uint32_t>(recvHeaderSeq_ % kRecvHeaders);
  size_t arrived = recvHeaderBytes_[slot];
  if (arrived == kNotArrived) return crossCheck(-1);
  TRN_TRY(checkFields(headerMemory(kSendHeaders + slot), arrived, kInline));
  recvInline_ = true;  // the slot is reposted once the message was consumed
  return Status::ok();
}

Status Channel::checkLeadingPiece() {
  auto slot = slotOf(nextPiece_[stream_]);
  size_t arrived = slotBytes_[slot];
  if (arrived == kNotArrived) return crossCheck(stream_);
  TRN_TRY(checkFields(slotMemory(slot), arrived, kLeads));
  slotConsumed_ = kHeaderBytes;
  if (arrived == kHeaderBytes) return retirePiece(slot);  // pieces read in place follow
  return Status::ok();
}

// Hands `n` bytes at `data`, the message's bytes from recv_.moved() on, to the receiver.
void Channel::hand(std::byte* into, const Consumer* consume, const std::byte* data, size_t n) {
  if (into == nullptr) {
    (*consume)(recv_.moved(), data, n);
  } else if (into + recv_.moved() != data) {  // not received in place
    std::memcpy(into + recv_.moved(), data, n);
  }
}

Result<size_t> Channel::consumeInline(size_t max, std::byte* into, const Consumer* consume) {
  auto slot = static_cast<uint32_t>(recvHeaderSeq_ % kRecvHeaders);
  size_t n = recv_.clamp(max);
  if (n == 0) return size_t{0};
  hand(into, consume, headerMemory(kSendHeaders + slot) + kHeaderBytes + recv_.moved(), n);
  recv_.advance(n);
  if (recv_.complete()) {
    recvInline_ = false;
    ++recvHeaderSeq_;
    TRN_TRY(postRecvHeader(slot, recvHeaderSeq_ + kRecvHeaders - 1));
  }
  return n;
}

Result<size_t> Channel::receive(size_t max, std::byte* into, const Consumer* consume) {
  TRN_TRY(error_);
  const bool pieces = stream_ == 1 && recv_.bytes() > inlineBytes();
  if (pieces && !recv_.complete()) TRN_TRY(postPieces(into));
  if (!headerChecked_) {
    TRN_TRY(recv_.bytes() <= inlineBytes() ? checkHeader() : checkLeadingPiece());
    if (!headerChecked_) return size_t{0};
    if (pieces && !recv_.complete()) TRN_TRY(postPieces(into));  // after a header alone
  }
  if (recvInline_) return consumeInline(max, into, consume);
  size_t handed = 0;
  while (!recv_.complete() && handed < max) {
    auto slot = slotOf(nextPiece_[stream_]);
    size_t arrived = slotBytes_[slot];
    if (arrived == kNotArrived) break;
    if (slotConsumed_ == 0 && (arrived == 0 || arrived > recv_.left())) {
      return Status(Code::kInternalError,
                    fmt::format("ofi: piece of {} bytes from rank {} in message tag {:#x} of {} "
                                "bytes, of which {} are left",
                                arrived, config_.peer, recv_.tag(), recv_.bytes(), recv_.left()),
                    config_.peer);
    }
    size_t n = std::min(arrived - slotConsumed_, max - handed);
    // In place, the payload starts at the slot's place (a first piece's header is in the slot).
    const size_t lead = nextPiece_[stream_] == firstSeq_ ? kHeaderBytes : 0;
    const std::byte* data = slotPlace_[slot] != nullptr ? slotPlace_[slot] + (slotConsumed_ - lead)
                                                        : slotMemory(slot) + slotConsumed_;
    hand(into, consume, data, n);
    slotConsumed_ += n;
    recv_.advance(n);
    handed += n;
    if (slotConsumed_ == arrived) {
      TRN_TRY(retirePiece(slot));
      if (pieces && !recv_.complete()) TRN_TRY(postPieces(into));
    }
  }
  return handed;
}

}  // namespace trnccl::transport::ofi
