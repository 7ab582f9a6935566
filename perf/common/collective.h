// The descriptor each *_perf.cc fills in: what a collective moves, what it should produce, and
// how to call it. The shared driver (driver.h) does everything else.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "common/data.h"
#include "common/report.h"
#include "trnccl/trnccl.h"

namespace trnccl::perf {

// Element counts of one call, from the element count a size gives (bytes / type size).
struct Counts {
  size_t send = 0;               // elements in each rank's send buffer
  size_t recv = 0;               // elements in each rank's receive buffer
  size_t param = 0;              // the count argument of the call
  size_t sendInplaceOffset = 0;  // in place, send = base + rank * sendInplaceOffset
  size_t recvInplaceOffset = 0;  // in place, recv = base + rank * recvInplaceOffset
};

// One call's parameters, as the descriptor sees them.
struct TestCase {
  DataKey key;    // type, op, nranks, rep
  int root = -1;  // -1 for unrooted collectives
  Counts counts;
};

struct RunArgs {
  const void* send;
  void* recv;
  const TestCase& tc;
  int rank;
  trncclComm_t comm;
  trnrtStream_t stream;
};

struct CollectiveTest {
  std::string_view name;  // binary name, e.g. "all_reduce_perf"
  std::string_view call;  // the trnccl function, for error messages
  bool reduces;           // loops over -o and prints the op; otherwise redop "none"
  bool rooted;            // loops over -r and prints the root; otherwise root -1
  // Every rank receives the same data, so the driver computes expected values once per chunk.
  bool sameResultOnAllRanks;
  // Whether the call has an in-place form (the Counts' in-place offsets); when not, the
  // in-place half of each row is printed as N/A and not run.
  bool inPlace = true;
  Counts (*counts)(size_t count, int nranks);
  double (*busBwFactor)(int nranks);
  // Values of rank's send buffer elements [begin, begin + out.size()).
  void (*input)(const TestCase& tc, int rank, size_t begin, std::span<double> out);
  // Expected values of rank's receive buffer elements [begin, begin + out.size()); returns
  // false when this rank's receive buffer is not defined (e.g. non-root ranks of reduce).
  bool (*expected)(const TestCase& tc, int rank, size_t begin, std::span<Expect> out);
  trncclResult_t (*run)(const RunArgs& args);
};

// Runs the benchmark described by test with argv's nccl-tests flags; returns the exit status.
int runPerf(int argc, char** argv, const CollectiveTest& test);

// The size column of a row, as nccl-tests: the larger of the send and receive buffers, in bytes.
// It is also the S of algbw = S / t.
inline size_t rowBytes(const Counts& counts, size_t typeSize) {
  return (counts.send > counts.recv ? counts.send : counts.recv) * typeSize;
}

// algbw and busbw of one call of test that took `seconds`.
inline Bandwidth rowBandwidth(const CollectiveTest& test, const Counts& counts, size_t typeSize,
                              double seconds, int nranks) {
  return bandwidth(rowBytes(counts, typeSize), seconds, test.busBwFactor(nranks));
}

// The descriptors, one per *_perf.cc. Each file also defines main() unless compiled with
// TRNCCL_PERF_NO_MAIN, as the unit test and the peer benchmarks (perf/peers) do to reuse them.
extern const CollectiveTest kAllReduceTest;
extern const CollectiveTest kAllGatherTest;
extern const CollectiveTest kReduceScatterTest;
extern const CollectiveTest kBroadcastTest;
extern const CollectiveTest kReduceTest;
extern const CollectiveTest kAlltoallTest;
extern const CollectiveTest kSendRecvTest;

}  // namespace trnccl::perf
