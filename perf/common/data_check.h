// Filling the device buffers from the descriptor's inputs, and counting wrong elements of the
// results against its expected values. Both work in chunks, so host memory stays small.
#pragma once

#include <cstdint>

#include "common/collective.h"
#include "common/local_ranks.h"

namespace trnccl::perf {

// Where one rank's call reads and writes, out of place or in place.
struct CallBuffers {
  char* send;
  char* recv;
};
CallBuffers callBuffers(const LocalRank& r, const TestCase& tc, bool inPlace);

// Poisons each local rank's output and writes its input.
void initData(const CollectiveTest& test, const TestCase& tc, bool inPlace, LocalRanks& ranks);
// Number of output elements of the local ranks outside tolerance; prints the first few.
int64_t countWrong(const CollectiveTest& test, const TestCase& tc, bool inPlace, LocalRanks& ranks);

}  // namespace trnccl::perf
