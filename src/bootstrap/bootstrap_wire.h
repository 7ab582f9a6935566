// The bootstrap wire protocol: fixed binary frames only (no self-describing formats a peer could
// abuse), every length capped before anything is allocated for it.
//
// Every message is a 32-byte header, then `length` payload bytes:
//   u32 protocol magic | u16 version | u16 type | u64 id magic | i32 rank | i32 arg | u64 length
// all little-endian. `arg` is nranks in a hello and the error Code in an error frame.
//
//   rank -> root   kHello    rank, nranks, payload = the rank's info blob (<= kMaxInfoBytes)
//   root -> rank   kTable    payload = nranks x u64 blob length, then the blobs in rank order
//   rank -> root   kGather   payload = this rank's contribution (<= kMaxGatherBytes)
//   root -> rank   kResult   payload = all contributions, rank order
//   rank -> root   kBroadcast payload = rank 0's bytes from rank 0, nothing from the others;
//                             the root answers every rank with kResult = rank 0's bytes (a
//                             round of its own: every rank of it sends kBroadcast)
//   rank -> root   kGoodbye  no payload; the rank is done
//   root -> rank   kError    rank = the rank the error concerns (-1: none), payload = message
//   rank -> root   kRevoke   the rank revoked the communicator (trncclCommRevoke); payload: none,
//                            or the message every rank is failed with (<= kMaxErrorBytes; arg =
//                            its Code), when a tier relays another session's failure (tiered.cc)
// On a rank's recovery port, for a shrink (recovery.h):
//   rank -> leader kShrinkAsk rank (in the parent), arg = n, idMagic = the parent's magic,
//                             payload = u32 attempt, then the n excluded ranks, ascending, u32
//   leader -> rank kShrinkId  payload = the new communicator's trncclUniqueId (128 bytes);
//                             or kError
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "transports/net/wire.h"

namespace trnccl::bootstrap::wire {

constexpr uint32_t kProtoMagic = 0x424e5254;  // "TRNB"
constexpr uint16_t kProtoVersion = 1;
constexpr size_t kHeaderBytes = 32;
constexpr uint64_t kMaxInfoBytes = 64 * 1024;
constexpr uint64_t kMaxGatherBytes = 16 * 1024 * 1024;
constexpr uint64_t kMaxErrorBytes = 4096;
constexpr int32_t kMaxRanks = 1 << 16;

enum class Type : uint16_t {
  kHello = 1,
  kTable = 2,
  kGather = 3,
  kResult = 4,
  kGoodbye = 5,
  kError = 6,
  kRevoke = 7,
  kShrinkAsk = 8,
  kShrinkId = 9,
  kBroadcast = 10,
};

struct Header {
  uint32_t protoMagic = kProtoMagic;
  uint16_t version = kProtoVersion;
  Type type = Type::kError;
  uint64_t idMagic = 0;
  int32_t rank = -1;
  int32_t arg = 0;
  uint64_t length = 0;
};

using HeaderBytes = std::array<std::byte, kHeaderBytes>;

inline HeaderBytes encode(const Header& h) {
  HeaderBytes out{};
  bytes::put<uint32_t>(&out[0], h.protoMagic);
  bytes::put<uint16_t>(&out[4], h.version);
  bytes::put<uint16_t>(&out[6], static_cast<uint16_t>(h.type));
  bytes::put<uint64_t>(&out[8], h.idMagic);
  bytes::put<uint32_t>(&out[16], static_cast<uint32_t>(h.rank));
  bytes::put<uint32_t>(&out[20], static_cast<uint32_t>(h.arg));
  bytes::put<uint64_t>(&out[24], h.length);
  return out;
}

inline Header decode(const HeaderBytes& in) {
  Header h;
  h.protoMagic = bytes::get<uint32_t>(&in[0]);
  h.version = bytes::get<uint16_t>(&in[4]);
  h.type = static_cast<Type>(bytes::get<uint16_t>(&in[6]));
  h.idMagic = bytes::get<uint64_t>(&in[8]);
  h.rank = static_cast<int32_t>(bytes::get<uint32_t>(&in[16]));
  h.arg = static_cast<int32_t>(bytes::get<uint32_t>(&in[20]));
  h.length = bytes::get<uint64_t>(&in[24]);
  return h;
}

// The check every frame's header passes before anything else of it is read (magic, version,
// a `length` of at most maxLength): transports/net/wire.h.
inline constexpr transport::net::Protocol kProtocol{"bootstrap", kProtoMagic, kProtoVersion};
inline transport::net::HeaderCheck check(const Header& h, uint64_t maxLength) {
  return transport::net::checkHeader(kProtocol, {h.protoMagic, h.version, h.length}, maxLength);
}

// The Code an error frame carries in `arg`; anything out of range reads as a remote error.
inline Code codeFromWire(int32_t arg) {
  if (arg <= static_cast<int32_t>(Code::kOk) || arg > static_cast<int32_t>(Code::kTimeout)) {
    return Code::kRemoteError;
  }
  return static_cast<Code>(arg);
}

inline void putU64(std::byte* at, uint64_t v) { bytes::put<uint64_t>(at, v); }
inline uint64_t getU64(const std::byte* at) { return bytes::get<uint64_t>(at); }

// Splits a kTable payload (nranks x u64 blob length, then the blobs in rank order) into
// `infos`. False when the lengths do not fit the payload or exceed kMaxInfoBytes; trailing
// bytes are ignored. Pure, so that it can be fuzzed (fuzz/bootstrap_wire.cc).
inline bool parseTable(const std::byte* data, size_t size, int nranks,
                       std::vector<std::vector<std::byte>>& infos) {
  if (nranks < 1 || nranks > kMaxRanks) return false;
  uint64_t header = 8 * static_cast<uint64_t>(nranks);
  if (size < header) return false;
  uint64_t offset = header;
  infos.assign(static_cast<size_t>(nranks), {});
  for (int r = 0; r < nranks; ++r) {
    uint64_t len = getU64(data + 8 * static_cast<size_t>(r));
    if (len > kMaxInfoBytes || len > size - offset) return false;
    infos[r].assign(data + offset, data + offset + len);
    offset += len;
  }
  return true;
}

}  // namespace trnccl::bootstrap::wire
