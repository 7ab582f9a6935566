// broadcast_perf: every rank's recvbuff = root's sendbuff; in place when sendbuff == recvbuff.
// A pipelined chain moves each byte over every link once, so busbw = algbw (factor 1).
// Loops over -r <root> or -r all.
#include "common/collective.h"
#include "common/report.h"

namespace trnccl::perf {
namespace {

Counts broadcastCounts(size_t count, int) { return {count, count, count, 0, 0}; }

void broadcastInput(const TestCase& tc, int rank, size_t begin, std::span<double> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = movementValue(tc.key, rank, begin + k);
}

bool broadcastExpected(const TestCase& tc, int, size_t begin, std::span<Expect> out) {
  for (size_t k = 0; k < out.size(); ++k) out[k] = {movementValue(tc.key, tc.root, begin + k), 0};
  return true;
}

trncclResult_t broadcastRun(const RunArgs& a) {
  return trncclBroadcast(a.send, a.recv, a.tc.counts.param, a.tc.key.type, a.tc.root, a.comm,
                         a.stream);
}

}  // namespace

const CollectiveTest kBroadcastTest{
    .name = "broadcast_perf",
    .call = "trncclBroadcast",
    .reduces = false,
    .rooted = true,
    .sameResultOnAllRanks = true,
    .counts = broadcastCounts,
    .busBwFactor = unitBusFactor,
    .input = broadcastInput,
    .expected = broadcastExpected,
    .run = broadcastRun,
};

}  // namespace trnccl::perf

#ifndef TRNCCL_PERF_NO_MAIN
int main(int argc, char** argv) {
  return trnccl::perf::runPerf(argc, argv, trnccl::perf::kBroadcastTest);
}
#endif
