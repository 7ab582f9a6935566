// reduce_scatter_perf: recvbuff[i] = op over ranks of sendbuff[rank*recvcount + i]; in place
// when recvbuff == sendbuff + rank*recvcount. size = send bytes = recvcount * n * type size;
// each rank sends (n-1)/n of it, hence the bus factor (n-1)/n.
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

// As nccl-tests: the size is the full (send) buffer, each rank keeps size / n of the result.
Counts reduceScatterCounts(size_t count, int nranks) {
  const size_t each = count / size_t(nranks);
  return {each * size_t(nranks), each, each, 0, each};
}

void reduceScatterInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = inputValue(tc.key, rank, begin + k);
}

bool reduceScatterExpected(const TestCase& tc, int rank, size_t begin, std::span<Expect> out) {
  const size_t first = size_t(rank) * tc.counts.param + begin;
  for (size_t k = 0; k < out.size(); ++k) out[k] = reducedValue(tc.key, first + k);
  return true;
}

trncclResult_t reduceScatterRun(const RunArgs& a) {
  return trncclReduceScatter(a.send, a.recv, a.tc.counts.param, a.tc.key.type, a.tc.key.op, a.comm,
                             a.stream);
}

}  // namespace

const CollectiveTest kReduceScatterTest{
    .name = "reduce_scatter_perf",
    .call = "trncclReduceScatter",
    .reduces = true,
    .rooted = false,
    .sameResultOnAllRanks = false,
    .counts = reduceScatterCounts,
    .busBwFactor = gatherBusFactor,
    .input = reduceScatterInput,
    .expected = reduceScatterExpected,
    .run = reduceScatterRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kReduceScatterTest);
}
#endif
