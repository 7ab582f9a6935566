// all_reduce_perf: recvbuff[i] = op over ranks of sendbuff[i]; in place when send == recv.
// Bytes moved per rank by a bandwidth-optimal algorithm: 2(n-1)/n * S, hence the bus factor.
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

Counts allReduceCounts(size_t count, int) { return {count, count, count, 0, 0}; }

void allReduceInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = inputValue(tc.key, rank, begin + k);
}

bool allReduceExpected(const TestCase& tc, int, size_t begin, std::span<Expect> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = reducedValue(tc.key, begin + k);
  return true;
}

trncclResult_t allReduceRun(const RunArgs& a) {
  return trncclAllReduce(a.send, a.recv, a.tc.counts.param, a.tc.key.type, a.tc.key.op, a.comm,
                         a.stream);
}

}  // namespace

const CollectiveTest kAllReduceTest{
    .name = "all_reduce_perf",
    .call = "trncclAllReduce",
    .reduces = true,
    .rooted = false,
    .sameResultOnAllRanks = true,
    .counts = allReduceCounts,
    .busBwFactor = allReduceBusFactor,
    .input = allReduceInput,
    .expected = allReduceExpected,
    .run = allReduceRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kAllReduceTest);
}
#endif
