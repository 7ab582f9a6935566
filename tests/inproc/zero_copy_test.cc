// The shm zero-copy threshold against the collectives' pipeline slice: every piece of the ring
// all-gather of at least half a slice (the default threshold), sent from the own block or
// forwarded from the receive buffer, must be read in place by the peer (a pointer descriptor
// between ranks of one process), never copied through the FIFO. When the default threshold sat
// above the slice (256 KiB against 64 KiB) no piece ever went in place and the all-gather made
// two copies per hop; at the slice (64 KiB) a 2-rank 64 KiB all-gather (32 KiB per rank) still
// did (issue 14). Counts straddle the threshold (one element below half a slice, one below a
// slice, exactly one, 2.5 slices), 2-5 ranks, out of place and in place; results checked too.
#include "transports/shm/zero_copy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "api/handle.h"
#include "comm/communicator.h"
#include "support/api_cases.h"
#include "support/ranks.h"
#include "support/tuning.h"
#include "transports/shm/testing.h"

namespace trnccl::testing {
namespace {

using ShmEvent = transport::shm::testing::Event;

int64_t shmCount(ShmEvent e) { return transport::shm::testing::counters().get(e); }

// One rank's all-gather of `count` floats per rank on device memory; returns the wrong elements.
size_t runAllGather(trncclComm_t comm, trnrtStream_t stream, int r, int n, size_t count,
                    bool inPlace) {
  const trncclDataType_t t = trncclFloat32;
  const size_t block = count * typeSize(t);
  DeviceBuffer recv(n * block);
  DeviceBuffer ownSend(inPlace ? 0 : block);
  unsigned char* send = inPlace ? recv.get() + r * block : ownSend.get();
  std::vector<unsigned char> in = rankInput(t, r, count);
  std::memcpy(send, in.data(), block);
  EXPECT_EQ(trncclAllGather(send, recv.get(), count, t, comm, stream), trncclSuccess)
      << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  size_t bad = 0;
  for (int b = 0; b < n; ++b) {
    for (size_t i = 0; i < count; ++i) {
      bad += decodeAny(t, recv.get() + b * block, i) != inputValue(trncclSum, b, i);
    }
  }
  return bad;
}

TEST(ZeroCopy, RingAllGatherReadsEveryFullSliceInPlace) {
  for (int n : {2, 3, 4, 5}) {
    Ranks& ranks = Ranks::get(n);
    ScopedTuning tuning(ranks, "ring");
    const size_t slice = ranks.comm(0)->impl->sliceBytes() / sizeof(float);
    ASSERT_EQ(2 * transport::shm::kDefaultZcopyBytes, slice * sizeof(float));
    struct Case {
      size_t count;
      int64_t inPlace;  // pieces per block read in place: every one of at least half a slice
      int64_t copied;   // per block: copied through the FIFO (all above the LL threshold)
    };
    for (const Case& c : {Case{slice / 2 - 1, 0, 1}, Case{slice - 1, 1, 0}, Case{slice, 1, 0},
                          Case{2 * slice + slice / 2, 3, 0}}) {
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(::testing::Message() << n << " ranks, count " << c.count << " (slice " << slice
                                          << ")" << (inPlace ? " in place" : ""));
        const int64_t inline0 = shmCount(ShmEvent::kInlineRecords);
        const int64_t pointer0 = shmCount(ShmEvent::kPointerDescriptors);
        std::vector<size_t> bad(n);
        ranks.run([&](int r) {
          bad[r] = runAllGather(ranks.comm(r), ranks.stream(r), r, n, c.count, inPlace);
        });
        for (int r = 0; r < n; ++r) EXPECT_EQ(bad[r], 0u) << "rank " << r;
        // Every rank receives n-1 blocks, each slice of them as one message.
        const int64_t hops = static_cast<int64_t>(n) * (n - 1);
        EXPECT_EQ(shmCount(ShmEvent::kPointerDescriptors) - pointer0, hops * c.inPlace);
        const int64_t copied = shmCount(ShmEvent::kInlineRecords) - inline0;
        if (c.copied == 0) {
          EXPECT_EQ(copied, 0);
        } else {
          EXPECT_GE(copied, hops * c.copied);
        }
      }
    }
  }
}

// At 2 ranks the all-gathers the tuner picks from 16 KiB to 1 MiB (mesh, bruck) exchange each
// block as one message, whole, never in slices: one descriptor per block from the zero-copy
// threshold, read in place; below it the FIFO. Counts of one element around 32 and 64 KiB per
// rank (the threshold and the slice), out of place and in place; results checked too (issue 14).
TEST(ZeroCopy, TwoRankAllGatherSendsEachBlockAsOneMessage) {
  Ranks& ranks = Ranks::get(2);
  const size_t threshold = transport::shm::kDefaultZcopyBytes / sizeof(float);
  const size_t slice = ranks.comm(0)->impl->sliceBytes() / sizeof(float);
  for (const char* algo : {"mesh", "bruck"}) {
    ScopedTuning tuning(ranks, algo);
    for (size_t count : {threshold - 1, threshold, threshold + 1, slice - 1, slice, slice + 1}) {
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << algo << ", count " << count << (inPlace ? " in place" : ""));
        const int64_t inline0 = shmCount(ShmEvent::kInlineRecords);
        const int64_t pointer0 = shmCount(ShmEvent::kPointerDescriptors);
        std::vector<size_t> bad(2);
        ranks.run([&](int r) {
          bad[r] = runAllGather(ranks.comm(r), ranks.stream(r), r, 2, count, inPlace);
        });
        EXPECT_EQ(bad[0] + bad[1], 0u);
        const bool described = count >= threshold;
        EXPECT_EQ(shmCount(ShmEvent::kPointerDescriptors) - pointer0, described ? 2 : 0);
        const int64_t copied = shmCount(ShmEvent::kInlineRecords) - inline0;
        if (described) {
          EXPECT_EQ(copied, 0);
        } else {
          EXPECT_GE(copied, 2);
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
