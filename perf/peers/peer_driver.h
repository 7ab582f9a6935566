// The shared driver of the peer benchmarks (mpi_bench, gloo_bench): another library's
// collective timed and checked with the same sizes, data model, bandwidth arithmetic and row
// format as the matching trnccl *_perf binary, so perf/compare can put them side by side.
//
// Differences from the *_perf driver, all deliberate: float sum only, one process per rank,
// one placement per collective name (whichever the peer's call supports, printed in the header;
// the *_in_place names are the in-place forms, for perf/compare.py --in-place),
// sizes a peer cannot run printed as N/A,
// and iteration times averaged over ranks (-a 1) only.
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "common/collective.h"

namespace trnccl::perf::peers {

// The peer library's group of processes.
class PeerGroup {
 public:
  virtual ~PeerGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  virtual double sum(double value) = 0;  // over all ranks, returned on every rank
};

// One call of a collective on fixed buffers, set up once per size (as a framework would keep
// a peer's algorithm object), run for warm-up, timing and the check. Empty when the peer cannot
// run that size (the row then shows N/A).
using PeerCall = std::function<void()>;

// Where a peer's call reads and writes.
enum class Placement {
  kOutOfPlace,  // separate send and receive buffers
  kInPlace,     // trnccl's (NCCL's) in-place offsets of the CollectiveTest's Counts
  kSameBuffer,  // one buffer: input in full, this rank's result at its start (Gloo's form)
};

struct PeerCollective {
  std::string_view name;       // first argument of the program, e.g. "all_reduce_ring"
  std::string_view call;       // the library function, e.g. "MPI_Allreduce"
  const CollectiveTest* test;  // the trnccl benchmark measuring the same thing
  Placement placement;         // the only one measured: whichever the call supports
  // send/recv follow test's counts and the placement; counts.param is the API count.
  PeerCall (*prepare)(PeerGroup& group, float* send, float* recv, const Counts& counts);
};

// argv: <collective name> [nccl-tests flags]. Prints the table on rank 0; returns the exit
// status (non-zero on a wrong value or a usage error).
int runPeerBench(int argc, char** argv, std::string_view library, PeerGroup& group,
                 std::span<const PeerCollective> collectives);

}  // namespace trnccl::perf::peers
