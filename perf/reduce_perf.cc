// reduce_perf: on the root, recvbuff[i] = op over ranks of sendbuff[i]; other ranks' recvbuff is
// undefined and unchecked. In place when sendbuff == recvbuff. A pipelined chain moves each byte
// over every link once, so busbw = algbw (factor 1). Loops over -r <root> or -r all.
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

Counts reduceCounts(size_t count, int) { return {count, count, count, 0, 0}; }

void reduceInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = inputValue(tc.key, rank, begin + k);
}

bool reduceExpected(const TestCase& tc, int rank, size_t begin, std::span<Expect> out) {
  if (rank != tc.root) return false;
  for (size_t k = 0; k < out.size(); ++k) out[k] = reducedValue(tc.key, begin + k);
  return true;
}

trncclResult_t reduceRun(const RunArgs& a) {
  return trncclReduce(a.send, a.recv, a.tc.counts.param, a.tc.key.type, a.tc.key.op, a.tc.root,
                      a.comm, a.stream);
}

}  // namespace

const CollectiveTest kReduceTest{
    .name = "reduce_perf",
    .call = "trncclReduce",
    .reduces = true,
    .rooted = true,
    .sameResultOnAllRanks = false,
    .counts = reduceCounts,
    .busBwFactor = unitBusFactor,
    .input = reduceInput,
    .expected = reduceExpected,
    .run = reduceRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kReduceTest);
}
#endif
