// trncclCommRegister over libfabric (tcp under ofi_rxm, loopback), N ranks in one process: a
// registered *host* buffer is sent from where it is (fi_tsend from the user's bytes) whatever
// the piece size, so an all-reduce whose send and receive buffers are registered copies no
// piece through the transport's bounce ring, while the same call on unregistered host buffers
// does; the results are the same. With TRNCCL_OFI_MR_LOCAL=1 (efa's FI_MR_LOCAL rule) each
// registered range is also registered with the domain once, and that registration closes after
// trncclCommDeregister.
#ifdef TRNCCL_HAVE_OFI

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "support/ranks.h"
#include "support/tuning.h"
#include "transports/ofi/testing.h"

namespace trnccl::testing {
namespace {

using OfiEvent = transport::ofi::testing::Event;

int64_t ofiCount(OfiEvent e) { return transport::ofi::testing::counters().get(e); }

// Communicators over ofi only, libfabric's tcp provider, with `mrLocal` as
// TRNCCL_OFI_MR_LOCAL; the environment is restored once they exist.
std::unique_ptr<Ranks> ofiRanks(int n, bool mrLocal) {
  setenv("TRNCCL_TRANSPORT", "ofi", 1);
  setenv("TRNCCL_OFI_PROVIDER", "tcp", 1);
  setenv("TRNCCL_OFI_MR_LOCAL", mrLocal ? "1" : "0", 1);
  auto ranks = std::make_unique<Ranks>(n);
  unsetenv("TRNCCL_TRANSPORT");
  unsetenv("TRNCCL_OFI_PROVIDER");
  unsetenv("TRNCCL_OFI_MR_LOCAL");
  return ranks;
}

// One float sum all-reduce per rank of `count` elements on host buffers (malloc'd memory, not
// trncclMemAlloc's), registered for the call when `registered`; the number of wrong elements.
size_t allReduce(Ranks& ranks, size_t count, bool inPlace, bool registered) {
  const int n = ranks.size();
  const size_t bytes = count * sizeof(float);
  std::vector<size_t> bad(n);
  ranks.run([&](int r) {
    trncclComm_t comm = ranks.comm(r);
    std::vector<float> send(count), out(inPlace ? 0 : count);
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(r + 1 + i % 7);
    float* recv = inPlace ? send.data() : out.data();
    std::vector<void*> handles;
    if (registered) {
      handles.assign(inPlace ? 1 : 2, nullptr);
      EXPECT_EQ(trncclCommRegister(comm, send.data(), bytes, &handles[0]), trncclSuccess);
      if (!inPlace) {
        EXPECT_EQ(trncclCommRegister(comm, recv, bytes, &handles[1]), trncclSuccess);
      }
    }
    EXPECT_EQ(
        trncclAllReduce(send.data(), recv, count, trncclFloat32, trncclSum, comm, ranks.stream(r)),
        trncclSuccess)
        << trncclGetLastError(comm);
    EXPECT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    for (void* handle : handles) {
      EXPECT_EQ(trncclCommDeregister(comm, handle), trncclSuccess);
    }
    for (size_t i = 0; i < count; ++i) {
      bad[r] += recv[i] != static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 7));
    }
  });
  size_t total = 0;
  for (size_t b : bad) total += b;
  return total;
}

// Ring (its partial sums travel in the receive buffer) and the tuner's choice, out of place and
// in place, two counts (80 KB and 1.2 MB) whose messages all exceed the inline size (smaller
// ones are copied into their header, registered or not): registered, no piece
// is copied through the ring and every piece sent counts as registered; unregistered, the
// reverse.
TEST(RegisterOfi, RegisteredHostBuffersSkipTheBounceRing) {
  const int n = 4;
  std::unique_ptr<Ranks> ranks = ofiRanks(n, false);
  ScopedTuning tuning(*ranks);
  for (const char* algo : {"ring", ""}) {
    tuning.set(algo);
    for (size_t count : {size_t{20001}, size_t{300001}}) {
      for (bool inPlace : {false, true}) {
        for (bool registered : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "TRNCCL_ALGO=" << algo << " count " << count
                       << (inPlace ? " in place" : "") << (registered ? " registered" : ""));
          const int64_t copied0 = ofiCount(OfiEvent::kCopiedPieces);
          const int64_t registered0 = ofiCount(OfiEvent::kRegisteredPieces);
          EXPECT_EQ(allReduce(*ranks, count, inPlace, registered), 0u);
          const int64_t copied = ofiCount(OfiEvent::kCopiedPieces) - copied0;
          const int64_t inPlacePieces = ofiCount(OfiEvent::kRegisteredPieces) - registered0;
          if (registered) {
            EXPECT_EQ(copied, 0);
            EXPECT_GT(inPlacePieces, 0);
          } else {
            EXPECT_GT(copied, 0);
            EXPECT_EQ(inPlacePieces, 0);
          }
        }
      }
    }
  }
}

// As efa would have it: the first registered call registers each rank's two buffers with its
// domain (at most 2 per rank: the ranges are registered whole, not per piece), a second call
// on the same buffers registers nothing, and deregistration closes them again.
TEST(RegisterOfi, MrLocalRegistersEachRangeOnceAndClosesItAfterDeregistration) {
  const int n = 2;
  const size_t count = 70001;
  const size_t bytes = count * sizeof(float);
  std::unique_ptr<Ranks> ranks = ofiRanks(n, true);
  ScopedTuning tuning(*ranks, "ring");
  std::vector<std::vector<float>> send(n, std::vector<float>(count));
  std::vector<std::vector<float>> recv(n, std::vector<float>(count));
  std::vector<void*> handles(2 * n);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) send[r][i] = static_cast<float>(r + 1);
    ASSERT_EQ(trncclCommRegister(ranks->comm(r), send[r].data(), bytes, &handles[2 * r]),
              trncclSuccess);
    ASSERT_EQ(trncclCommRegister(ranks->comm(r), recv[r].data(), bytes, &handles[2 * r + 1]),
              trncclSuccess);
  }
  auto call = [&] {
    ranks->run([&](int r) {
      EXPECT_EQ(trncclAllReduce(send[r].data(), recv[r].data(), count, trncclFloat32, trncclSum,
                                ranks->comm(r), ranks->stream(r)),
                trncclSuccess);
      EXPECT_EQ(trnrtStreamSynchronize(ranks->stream(r)), trnrtSuccess);
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(recv[r][count / 2], 3.0f) << "rank " << r;
  };
  const int64_t registrations0 = ofiCount(OfiEvent::kRegistrations);
  const int64_t live0 = ofiCount(OfiEvent::kLiveRegistrations);
  const int64_t copied0 = ofiCount(OfiEvent::kCopiedPieces);
  call();
  const int64_t first = ofiCount(OfiEvent::kRegistrations) - registrations0;
  EXPECT_GE(first, 1);
  EXPECT_LE(first, 2 * n);
  call();
  EXPECT_EQ(ofiCount(OfiEvent::kRegistrations) - registrations0, first);  // nothing new
  EXPECT_EQ(ofiCount(OfiEvent::kCopiedPieces), copied0);
  EXPECT_EQ(ofiCount(OfiEvent::kLiveRegistrations) - live0, first);

  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(trncclCommDeregister(ranks->comm(r), handles[2 * r]), trncclSuccess);
    EXPECT_EQ(trncclCommDeregister(ranks->comm(r), handles[2 * r + 1]), trncclSuccess);
  }
  call();  // unregistered now: copied, and the stale registrations are closed on the way
  EXPECT_GT(ofiCount(OfiEvent::kCopiedPieces), copied0);
  EXPECT_EQ(ofiCount(OfiEvent::kLiveRegistrations), live0);
}

}  // namespace
}  // namespace trnccl::testing

#endif  // TRNCCL_HAVE_OFI
