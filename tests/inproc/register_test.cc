// trncclMemAlloc / trncclCommRegister over N ranks in one process: what the calls refuse, and
// that registration changes the path, not the result. Same-process shm peers read a registered
// piece in place (a pointer descriptor) from the registered floor up, an unregistered one only
// from the zero-copy threshold (TRNCCL_SHM_ZCOPY_BYTES), so with the threshold raised an
// all-reduce whose send and receive buffers are registered copies nothing through the FIFOs
// (the shm counter of inline records stays put), while the same call on unregistered buffers
// of the same size does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "api/handle.h"
#include "support/api_cases.h"
#include "support/ranks.h"
#include "support/tuning.h"
#include "transports/shm/testing.h"
#include "transports/shm/zero_copy.h"

namespace trnccl::testing {
namespace {

using ShmEvent = transport::shm::testing::Event;

int64_t shmCount(ShmEvent e) { return transport::shm::testing::counters().get(e); }

std::string lastError() { return trncclGetLastError(nullptr); }

TEST(Register, RefusesBadArgumentsWithAMessage) {
  Ranks& ranks = Ranks::get(2);
  trncclComm_t comm = ranks.comm(0);
  void* buf = nullptr;
  void* handle = nullptr;
  EXPECT_EQ(trncclMemAlloc(nullptr, 64), trncclInvalidArgument);
  EXPECT_NE(lastError().find("ptr is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclMemAlloc(&buf, 0), trncclInvalidArgument);
  EXPECT_NE(lastError().find("size is 0"), std::string::npos) << lastError();
  ASSERT_EQ(trncclMemAlloc(&buf, 4096), trncclSuccess) << lastError();

  EXPECT_EQ(trncclCommRegister(comm, nullptr, 64, &handle), trncclInvalidArgument);
  EXPECT_NE(lastError().find("buff is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclCommRegister(comm, buf, 64, nullptr), trncclInvalidArgument);
  EXPECT_NE(lastError().find("handle is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclCommRegister(comm, buf, 0, &handle), trncclInvalidArgument);
  EXPECT_EQ(trncclCommRegister(nullptr, buf, 64, &handle), trncclInvalidArgument);

  EXPECT_EQ(trncclCommDeregister(comm, nullptr), trncclInvalidArgument);
  EXPECT_NE(lastError().find("handle is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclCommDeregister(comm, buf), trncclInvalidArgument);  // a pointer, no handle
  EXPECT_NE(lastError().find("no live registration"), std::string::npos) << lastError();

  ASSERT_EQ(trncclCommRegister(comm, buf, 4096, &handle), trncclSuccess) << lastError();
  EXPECT_EQ(comm->impl->registered().size(), 1u);
  // A handle belongs to its communicator.
  EXPECT_EQ(trncclCommDeregister(ranks.comm(1), handle), trncclInvalidArgument);
  EXPECT_EQ(trncclCommDeregister(comm, handle), trncclSuccess) << lastError();
  EXPECT_EQ(comm->impl->registered().size(), 0u);
  EXPECT_EQ(trncclCommDeregister(comm, handle), trncclInvalidArgument);
  EXPECT_NE(lastError().find("deregistered already"), std::string::npos) << lastError();

  EXPECT_EQ(trncclMemFree(buf), trncclSuccess);
  EXPECT_EQ(trncclMemFree(nullptr), trncclSuccess);
  int onStack = 0;
  EXPECT_EQ(trncclMemFree(&onStack), trncclInvalidArgument);
  EXPECT_NE(lastError().find("not memory of trncclMemAlloc"), std::string::npos) << lastError();
}

// Registered pieces go in place from the registered floor (transports/shm/zero_copy.h, 64 KiB,
// the pipeline slice), even where TRNCCL_SHM_ZCOPY_BYTES keeps unregistered ones in the
// FIFO: with the threshold raised above every piece, an all-reduce of full pipeline slices
// (ring blocks of two slices, each at the floor) copies through the FIFOs unregistered, and
// copies nothing registered, its pieces going by descriptor. Blocks below the floor are copied
// either way (a descriptor would cost more than the copy). Out of place and in place, under
// the ring and under the tuner's own choice.
TEST(Register, RegisteredBuffersSkipTheFifoCopies) {
  using transport::shm::kRegisteredMinBytes;
  const int n = 4;
  setenv("TRNCCL_SHM_ZCOPY_BYTES", std::to_string(16 * kRegisteredMinBytes).c_str(), 1);
  auto owned = std::make_unique<Ranks>(n);
  unsetenv("TRNCCL_SHM_ZCOPY_BYTES");
  const Ranks& ranks = *owned;
  ASSERT_EQ(ranks.comm(0)->impl->sliceBytes(), kRegisteredMinBytes);
  const size_t above = n * 2 * kRegisteredMinBytes / sizeof(float);  // blocks of 2 slices
  const size_t below = n * (kRegisteredMinBytes / 2) / sizeof(float);
  ScopedTuning tuning(ranks);
  for (const char* algo : {"ring", ""}) {
    tuning.set(algo);
    for (size_t count : {above, below}) {
      for (bool inPlace : {false, true}) {
        for (bool registered : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "TRNCCL_ALGO=" << algo << " count " << count
                       << (inPlace ? " in place" : "") << (registered ? " registered" : ""));
          const int64_t inline0 = shmCount(ShmEvent::kInlineRecords);
          const int64_t reg0 = shmCount(ShmEvent::kRegisteredPieces);
          std::vector<size_t> bad(n);
          ranks.run([&](int r) {
            bad[r] = runRegisteredAllReduce(ranks.comm(r), ranks.stream(r), r, n, trncclFloat32,
                                            count, inPlace, registered);
          });
          for (int r = 0; r < n; ++r) EXPECT_EQ(bad[r], 0u) << "rank " << r;
          const int64_t copied = shmCount(ShmEvent::kInlineRecords) - inline0;
          const int64_t inPlaceReads = shmCount(ShmEvent::kRegisteredPieces) - reg0;
          if (registered && count == above) {
            EXPECT_EQ(copied, 0);
            EXPECT_GT(inPlaceReads, 0);
          } else {
            EXPECT_GT(copied, 0);
            EXPECT_EQ(inPlaceReads, 0);
          }
        }
      }
    }
  }
}

// Pieces read in place are read later than copies would be: every all-reduce algorithm must
// still leave its sources alone until the peers have read them. Registered buffers, every name
// of the registry (those that decline fall back), 3 and 4 ranks, in and out of place.
TEST(Register, EveryAllReduceAlgorithmIsRightOnRegisteredBuffers) {
  for (int n : {3, 4}) {
    Ranks& ranks = Ranks::get(n);
    ScopedTuning tuning(ranks);
    for (const algorithms::Algorithm* a :
         algorithms::algorithmsFor(algorithms::Collective::kAllReduce)) {
      tuning.set(a->name);
      for (size_t count : {size_t{7}, size_t{1000}, size_t{70001}}) {
        for (bool inPlace : {false, true}) {
          std::vector<size_t> bad(n);
          ranks.run([&](int r) {
            bad[r] = runRegisteredAllReduce(ranks.comm(r), ranks.stream(r), r, n, trncclFloat32,
                                            count, inPlace, true);
          });
          for (int r = 0; r < n; ++r) {
            EXPECT_EQ(bad[r], 0u) << a->name << " n " << n << " count " << count
                                  << (inPlace ? " in place" : "") << " rank " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
