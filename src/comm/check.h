// Consistency check mode (TRNCCL_CHECK=1, off by default; read at communicator init into
// Config::check): before each collective, every rank sends a fingerprint of the call to every
// other rank and compares them. A mismatch (count, datatype, op, root, collective, sequence
// number or the algorithm the planner chose) fails every rank with the same message, naming
// both ranks and both values, instead of hanging or returning wrong data (NVIDIA/nccl#1417;
// c10d's TORCH_DISTRIBUTED_DEBUG=DETAIL fingerprint).
//
// Why all peers rather than ring neighbours: with neighbours only, the rank next to a mismatch
// would fail while the others wait for it until their timeout. With every fingerprint on every
// rank, all ranks find the same first mismatch (the lowest rank that differs from rank 0) and
// fail at once. The exchange is a schedule of n-1 sends and receives of kWireBytes each, run by
// the executor over the communicator's own connections, so it inherits its deadline, abort and
// peer-death checks. Cost: one small all-to-all per collective; a debug mode.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "algorithms/algorithm.h"
#include "common/status.h"
#include "schedule/schedule.h"

namespace trnccl::comm {
class Communicator;
}

namespace trnccl::comm::check {

struct Fingerprint {
  uint64_t seq = 0;
  int32_t coll = 0;  // algorithms::Collective
  int32_t type = 0;  // device::DataType
  uint64_t count = 0;
  int32_t op = -1;                   // device::RedOp; -1 for collectives that do not reduce
  int32_t root = -1;                 // -1 for collectives without a root
  std::array<char, 16> algorithm{};  // the planner's choice, NUL-padded (truncated)

  bool operator==(const Fingerprint&) const = default;
};

inline constexpr size_t kWireBytes = 48;

// The fingerprint of a planned call; seq is filled in when the call gets its number.
Fingerprint make(const algorithms::CollArgs& args, const std::string& algorithm);

// Fixed little-endian layout; decode accepts any bytes (a peer's are not trusted).
void encode(const Fingerprint& fp, std::byte out[kWireBytes]);
Fingerprint decode(const std::byte in[kWireBytes]);

// "allreduce count 1024 float32 sum (ring) #3": for messages; safe on any decoded value.
std::string describe(const Fingerprint& fp);

// OK when every fingerprint equals rank 0's; else a kInvalidUsage error naming the first
// differing rank, rank 0, the field and both values. `what` prefixes the message.
Status compare(std::span<const Fingerprint> all, const std::string& what);

// This rank's part of the exchange: send `mine` to every peer, receive peer p's into
// all[p * kWireBytes]. Buffers must outlive the schedule's execution.
schedule::Schedule exchangeSchedule(int rank, int nranks, const std::byte* mine, std::byte* all);

// Runs the exchange for call `seq` on the stream worker and compares; records a mismatch as
// the communicator's async error.
Status verify(Communicator& comm, Fingerprint fp, uint64_t seq, const std::string& what);

}  // namespace trnccl::comm::check
