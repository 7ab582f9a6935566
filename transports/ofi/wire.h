// What an ofi connection puts on the wire: tagged messages only.
//
// Each executor message of `bytes` > 0 travels as one header message (Header below) and one or
// more data pieces of at most the pair's piece size. Headers and pieces are numbered by two
// per-connection, per-direction sequences, and the receiver posts each of its buffers for one
// exact (kind, sender rank, sequence) tag, so nothing depends on the provider's ordering and
// no two peers or kinds can ever match the same receive. The header carries the executor's tag
// and size; the receiver checks both against beginRecv() before it hands out any byte.
// A message of 0 bytes puts nothing on the wire (like shm): the executor never polls it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trnccl::transport::ofi {

// Tag bits: [62] header, [40, 62) sender rank, [0, 40) sequence. Bit 63 stays clear: some
// providers reserve the top bits of the tag.
inline constexpr uint64_t kHeaderBit = uint64_t{1} << 62;
inline constexpr int kRankShift = 40;
inline constexpr uint64_t kRankMask = (uint64_t{1} << 22) - 1;
inline constexpr uint64_t kSeqMask = (uint64_t{1} << kRankShift) - 1;
inline constexpr int kMaxRanks = static_cast<int>(kRankMask) + 1;

inline uint64_t wireTag(bool header, int senderRank, uint64_t seq) {
  return (header ? kHeaderBit : 0) |
         ((static_cast<uint64_t>(senderRank) & kRankMask) << kRankShift) | (seq & kSeqMask);
}

inline constexpr uint32_t kHeaderMagic = 0x4f464931;  // "OFI1"

struct Header {
  uint32_t magic = kHeaderMagic;
  uint32_t reserved = 0;
  uint64_t tag = 0;    // the executor's message tag
  uint64_t bytes = 0;  // the message's size
  uint64_t pad = 0;
};
inline constexpr size_t kHeaderBytes = 32;
static_assert(sizeof(Header) == kHeaderBytes);

}  // namespace trnccl::transport::ofi
