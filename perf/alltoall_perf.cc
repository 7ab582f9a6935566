// alltoall_perf: block j of rank r's sendbuff lands as block r of rank j's recvbuff, blocks of
// count elements; in place when sendbuff == recvbuff. size = count * n * type size (the whole
// send buffer); each rank keeps 1/n of it local, hence the bus factor (n-1)/n.
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

// As nccl-tests: the size is each rank's whole buffer, the call's count is one block.
Counts alltoallCounts(size_t count, int nranks) {
  const size_t block = count / size_t(nranks);
  return {block * size_t(nranks), block * size_t(nranks), block, 0, 0};
}

void alltoallInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = movementValue(tc.key, rank, begin + k);
}

bool alltoallExpected(const TestCase& tc, int rank, size_t begin, std::span<Expect> out) {
  const size_t block = tc.counts.param;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t j = begin + k;
    const int from = int(j / block);
    out[k] = {movementValue(tc.key, from, size_t(rank) * block + j % block), 0};
  }
  return true;
}

trncclResult_t alltoallRun(const RunArgs& a) {
  return trncclAlltoAll(a.send, a.recv, a.tc.counts.param, a.tc.key.type, a.comm, a.stream);
}

}  // namespace

const CollectiveTest kAlltoallTest{
    .name = "alltoall_perf",
    .call = "trncclAlltoAll",
    .reduces = false,
    .rooted = false,
    .sameResultOnAllRanks = false,
    .counts = alltoallCounts,
    .busBwFactor = gatherBusFactor,
    .input = alltoallInput,
    .expected = alltoallExpected,
    .run = alltoallRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kAlltoallTest);
}
#endif
