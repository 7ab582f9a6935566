// trncclMemAlloc / trncclCommRegister over N ranks in one process: what the calls refuse, and
// that registration changes the path, not the result. Same-process shm peers read a registered
// piece in place (a pointer descriptor) whatever its size, so an all-reduce whose send and
// receive buffers are registered copies nothing through the FIFOs (the shm counter of inline
// records stays put), while the same call on unregistered buffers of the same size does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "api/handle.h"
#include "support/api_cases.h"
#include "support/ranks.h"
#include "transports/shm/testing.h"

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

// Counts below the zero-copy threshold (every piece would go through the FIFO) and above the LL
// protocol's (TRNCCL_SHM_LL_THRESHOLD, 512 B: messages that small are copied into LL lines,
// registered or not, being faster so), out of place
// and in place, under the ring and under the tuner's own choice: unregistered, the FIFOs carry
// the payload; registered, no byte is copied through them and the result is the same.
TEST(Register, RegisteredBuffersSkipTheFifoCopies) {
  const int n = 4;
  Ranks& ranks = Ranks::get(n);
  for (const char* algo : {"ring", ""}) {
    if (*algo != 0) setenv("TRNCCL_ALGO", algo, 1);
    for (size_t count : {size_t{1000}, size_t{20001}}) {
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
          if (registered) {
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
  unsetenv("TRNCCL_ALGO");
}

// Pieces read in place are read later than copies would be: every all-reduce algorithm must
// still leave its sources alone until the peers have read them. Registered buffers, every name
// of the registry (those that decline fall back), 3 and 4 ranks, in and out of place.
TEST(Register, EveryAllReduceAlgorithmIsRightOnRegisteredBuffers) {
  for (int n : {3, 4}) {
    Ranks& ranks = Ranks::get(n);
    for (const algorithms::Algorithm* a :
         algorithms::algorithmsFor(algorithms::Collective::kAllReduce)) {
      setenv("TRNCCL_ALGO", a->name, 1);
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
  unsetenv("TRNCCL_ALGO");
}

}  // namespace
}  // namespace trnccl::testing
