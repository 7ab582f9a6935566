// Out of place, the all-gathers (ring, bruck, mesh) send this rank's block straight from sendbuff
// and copy it into recvbuff only after the first exchange (issue 14): copying first made every
// call's transfers wait for that copy (a 2-rank 256 KiB all-gather out of place took 2-4x its
// in-place time). Each step reading this rank's block out of recvbuff must still come after the
// copy.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/allgather/ring.h"
#include "algorithms/bruck.h"
#include "algorithms/mesh.h"

namespace trnccl::algorithms {
namespace {

using schedule::Primitive;

void expectSendsBeforeTheCopy(const Algorithm& algo, int n, int channels) {
  constexpr size_t kCount = 1000;  // several slices of 1 KiB
  std::vector<float> send(kCount), recv(n * kCount);
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE(::testing::Message() << algo.name << ", " << n << " ranks, rank " << r << ", "
                                      << channels << " channel(s)");
    CollArgs a;
    a.coll = Collective::kAllGather;
    a.count = kCount;
    a.send = send.data();
    a.recv = recv.data();
    a.rank = r;
    a.nranks = n;
    a.channels = channels;
    a.sliceBytes = 1024;
    const schedule::Schedule s = algo.build(a);
    const auto* mineBegin = reinterpret_cast<const std::byte*>(recv.data() + r * kCount);
    const auto* mineEnd = mineBegin + kCount * sizeof(float);
    int copies = 0, sendsFromSendbuff = 0, sendsBeforeCopy = 0;
    for (const schedule::Step& st : s.steps()) {
      const auto* src = static_cast<const std::byte*>(st.src);
      if (st.prim == Primitive::kCopy) {
        EXPECT_EQ(st.src, a.send);
        EXPECT_EQ(st.dst, mineBegin);
        EXPECT_EQ(st.count, kCount);
        EXPECT_GT(sendsBeforeCopy, 0) << "the copy runs before anything is sent";
        ++copies;
        continue;
      }
      if (st.prim != Primitive::kSend) continue;
      if (copies == 0) ++sendsBeforeCopy;
      const auto* sendBegin = reinterpret_cast<const std::byte*>(send.data());
      if (src >= sendBegin && src < sendBegin + kCount * sizeof(float)) ++sendsFromSendbuff;
      if (src >= mineBegin && src < mineEnd) {
        EXPECT_EQ(copies, 1) << "my block sent from recvbuff before it was copied there";
      }
    }
    EXPECT_EQ(copies, 1);
    EXPECT_GT(sendsFromSendbuff, 0);
  }
}

TEST(AllGatherOrder, RingSendsFromSendbuffAndCopiesLast) {
  for (int n : {2, 3, 5, 8}) {
    for (int channels : {1, 2}) expectSendsBeforeTheCopy(allgather::kRing, n, channels);
  }
}

TEST(AllGatherOrder, BruckSendsFromSendbuffAndCopiesAfterTheFirstExchange) {
  for (int n : {2, 3, 5, 8, 13}) expectSendsBeforeTheCopy(kBruckAllGather, n, 1);
}

TEST(AllGatherOrder, MeshSendsFromSendbuffAndCopiesLast) {
  for (int n : {2, 3, 5, 8}) expectSendsBeforeTheCopy(kMeshAllGather, n, 1);
}

}  // namespace
}  // namespace trnccl::algorithms
