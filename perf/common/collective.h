// The descriptor each *_perf.cc fills in: what a collective moves, what it should produce, and
// how to call it. The shared driver (driver.h) does everything else.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "common/data.h"
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

}  // namespace trnccl::perf
