// sendrecv_perf: in one group, each rank sends its sendbuff to rank+1 and receives rank-1's
// into its recvbuff (a ring shift); in place when sendbuff == recvbuff. Each byte crosses one
// link, so busbw = algbw (factor 1).
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

Counts sendRecvCounts(size_t count, int) { return {count, count, count, 0, 0}; }

int prevRank(int rank, int nranks) { return (rank + nranks - 1) % nranks; }

void sendRecvInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = movementValue(tc.key, rank, begin + k);
}

bool sendRecvExpected(const TestCase& tc, int rank, size_t begin, std::span<Expect> out) {
  const int from = prevRank(rank, tc.key.nranks);
  for (size_t k = 0; k < out.size(); ++k) out[k] = {movementValue(tc.key, from, begin + k), 0};
  return true;
}

trncclResult_t sendRecvRun(const RunArgs& a) {
  const int n = a.tc.key.nranks;
  const size_t count = a.tc.counts.param;
  if (trncclResult_t r = trncclGroupStart(); r != trncclSuccess) return r;
  const trncclResult_t s =
      trncclSend(a.send, count, a.tc.key.type, (a.rank + 1) % n, a.comm, a.stream);
  const trncclResult_t r =
      trncclRecv(a.recv, count, a.tc.key.type, prevRank(a.rank, n), a.comm, a.stream);
  const trncclResult_t e = trncclGroupEnd();  // always close the group, even after an error
  return s != trncclSuccess ? s : r != trncclSuccess ? r : e;
}

}  // namespace

const CollectiveTest kSendRecvTest{
    .name = "sendrecv_perf",
    .call = "trncclSend/trncclRecv",
    .reduces = false,
    .rooted = false,
    .sameResultOnAllRanks = false,
    // Sending from and receiving into one buffer is undefined (docs/COLLECTIVES.md lists no
    // in-place form for send/recv): with trnccl's zero-copy shm a receiver may read its peer's
    // buffer after the peer's own receive overwrote it. nccl-tests runs it anyway.
    .inPlace = false,
    .counts = sendRecvCounts,
    .busBwFactor = unitBusFactor,
    .input = sendRecvInput,
    .expected = sendRecvExpected,
    .run = sendRecvRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kSendRecvTest);
}
#endif
