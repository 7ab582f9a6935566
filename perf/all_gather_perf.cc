// all_gather_perf: recvbuff[r*sendcount + i] = sendbuff of rank r [i]; in place when
// sendbuff == recvbuff + rank*sendcount. size = recvcount bytes = sendcount * n * type size;
// each rank receives (n-1)/n of it, hence the bus factor (n-1)/n.
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

// As nccl-tests: the size is the gathered buffer, each rank contributes size / n of it.
Counts allGatherCounts(size_t count, int nranks) {
  const size_t each = count / size_t(nranks);
  return {each, each * size_t(nranks), each, each, 0};
}

void allGatherInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = movementValue(tc.key, rank, begin + k);
}

bool allGatherExpected(const TestCase& tc, int, size_t begin, std::span<Expect> out) {
  const size_t each = tc.counts.param;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t j = begin + k;
    out[k] = {movementValue(tc.key, int(j / each), j % each), 0};
  }
  return true;
}

trncclResult_t allGatherRun(const RunArgs& a) {
  return trncclAllGather(a.send, a.recv, a.tc.counts.param, a.tc.key.type, a.comm, a.stream);
}

}  // namespace

const CollectiveTest kAllGatherTest{
    .name = "all_gather_perf",
    .call = "trncclAllGather",
    .reduces = false,
    .rooted = false,
    .sameResultOnAllRanks = true,
    .counts = allGatherCounts,
    .busBwFactor = gatherBusFactor,
    .input = allGatherInput,
    .expected = allGatherExpected,
    .run = allGatherRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kAllGatherTest);
}
#endif
