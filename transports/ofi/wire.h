// What an ofi connection puts on the wire: tagged messages only.
//
// Each executor message of `bytes` > 0 travels as one message when it can: up to the pair's
// inline bound (kInlineBytes, or kNativeInlineBytes over a provider without an eager limit)
// inside a header message (kInline: the payload follows the header), and larger ones as data
// pieces of at most the pair's piece size, the first of which starts with the header (kLeads:
// the header leads the first piece's payload; a piece read in place from the caller's buffer
// follows a piece of the header alone). One message instead of a header and a piece halves the
// sends, completions and wake-ups of every message up to the piece size. Header messages and
// pieces are numbered by two per-connection, per-direction sequences, and the receiver posts
// each of its buffers for one exact (kind, sender rank, sequence) tag, so nothing depends on
// the provider's ordering and no two peers or kinds can ever match the same receive. The
// header carries the executor's tag and size and the message's number; the receiver checks
// all three against beginRecv() before it hands out any byte, and a message that arrives on the
// other stream (the two ranks disagree about a size on both sides of the inline bound) fails too.
// A message of 0 bytes puts nothing on the wire (like shm): the executor never polls it.
//
// Heartbeats (transports/core/liveness.h) travel on an endpoint of their own (heartbeat.h):
// tagged messages of their own kind, 8 bytes each (kHeartbeatMagic, or kGoodbyeMagic when the
// sender closes), numbered by their own sequence; the receiver takes them whatever their
// number (the sequence bits are ignored on its one posted heartbeat receive per peer).
#pragma once

#include <cstddef>
#include <cstdint>

namespace trnccl::transport::ofi {

// Tag bits: [61, 63) kind, [40, 61) sender rank, [0, 40) sequence. Bit 63 stays clear: some
// providers reserve the top bits of the tag.
// kPlaced: pieces of messages above the pair's placeBytes (channel.h), a sequence of their own.
enum class WireKind : uint64_t { kData = 0, kHeader = 1, kHeartbeat = 2, kPlaced = 3 };
inline constexpr int kKindShift = 61;
inline constexpr int kRankShift = 40;
inline constexpr uint64_t kRankMask = (uint64_t{1} << 21) - 1;
inline constexpr uint64_t kSeqMask = (uint64_t{1} << kRankShift) - 1;
inline constexpr int kMaxRanks = static_cast<int>(kRankMask) + 1;

inline uint64_t wireTag(WireKind kind, int senderRank, uint64_t seq) {
  return (static_cast<uint64_t>(kind) << kKindShift) |
         ((static_cast<uint64_t>(senderRank) & kRankMask) << kRankShift) | (seq & kSeqMask);
}

inline constexpr uint64_t kHeartbeatMagic = 0x74'61'65'62'69'66'6f'74ULL;  // "tofibeat"
inline constexpr uint64_t kGoodbyeMagic = 0x21'65'79'62'69'66'6f'74ULL;    // "tofibye!"

inline constexpr uint32_t kHeaderMagic = 0x4f464931;  // "OFI1"
inline constexpr uint32_t kInline = 1;                // Header::flags: the payload follows
inline constexpr uint32_t kLeads = 2;  // Header::flags: it opens the message's first data piece

struct Header {
  uint32_t magic = kHeaderMagic;
  uint32_t flags = 0;
  uint64_t tag = 0;      // the executor's message tag
  uint64_t bytes = 0;    // the message's size
  uint64_t message = 0;  // how many messages of this connection and direction came before
};
inline constexpr size_t kHeaderBytes = 32;
static_assert(sizeof(Header) == kHeaderBytes);
// A header with its inline payload fills one header slot (the pair's, ChannelConfig): by
// default 16 KiB, ofi_rxm's default eager limit (FI_OFI_RXM_BUFFER_SIZE), so an inline message
// is one eager message even where trnccl did not raise the limit (provider.h tuneProvider).
// Inline, the message needs no data slots (allocated on the first larger message) and may run
// up to kRecvHeaders ahead.
inline constexpr size_t kHeaderSlotBytes = 16384;
inline constexpr size_t kInlineBytes = kHeaderSlotBytes - kHeaderBytes;
// Over libfabric's native tcp RDM provider (xnet: `net` in 1.17, `tcp` from 1.18), which has
// no eager limit: 64 KiB slots, so a 32 KiB message is one header message too, not a data
// piece (whose arrival the waker streams: transports/ofi/README.md, session 10).
inline constexpr size_t kNativeHeaderSlotBytes = 65536;
inline constexpr size_t kNativeInlineBytes = kNativeHeaderSlotBytes - kHeaderBytes;
// Over the same provider, messages up to this size do not stream (provider.h streamBytes).
inline constexpr size_t kNativeStreamBytes = size_t{256} << 10;
// Over the same provider, data pieces from this size go from the caller's buffer (provider.h
// zeroCopyBytes): every piece of a message above the inline bound but its last few bytes.
inline constexpr size_t kNativeZeroCopyBytes = size_t{64} << 10;
// Over the same provider, messages above this size travel as placed pieces (provider.h
// placeBytes): posted per message, straight into a copying receiver's destination. Smaller ones
// keep slots posted ahead (a 256 KiB all-reduce was 1.3x slower placed; README.md, session 17).
inline constexpr size_t kNativePlaceBytes = size_t{256} << 10;

}  // namespace trnccl::transport::ofi
