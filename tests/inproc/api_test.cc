// The front door: bad input returns trncclInvalidArgument with a readable message and loses
// nothing; the communicator keeps working afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/ranks.h"

namespace trnccl::testing {
namespace {

std::string lastError() { return trncclGetLastError(nullptr); }

TEST(Api, VersionAndErrorStrings) {
  int version = 0;
  ASSERT_EQ(trncclGetVersion(&version), trncclSuccess);
  EXPECT_EQ(version, TRNCCL_VERSION_CODE);
  EXPECT_EQ(trncclGetVersion(nullptr), trncclInvalidArgument);
  for (int r = 0; r < trncclNumResults; ++r) {
    EXPECT_STRNE(trncclGetErrorString(static_cast<trncclResult_t>(r)), "unknown result code");
  }
}

TEST(Api, CommQueries) {
  Ranks& ranks = Ranks::get(2);
  for (int r = 0; r < 2; ++r) {
    int count = 0, rank = -1, device = -1;
    ASSERT_EQ(trncclCommCount(ranks.comm(r), &count), trncclSuccess);
    ASSERT_EQ(trncclCommUserRank(ranks.comm(r), &rank), trncclSuccess);
    ASSERT_EQ(trncclCommDevice(ranks.comm(r), &device), trncclSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(device, r);
    trncclResult_t async = trncclInternalError;
    ASSERT_EQ(trncclCommGetAsyncError(ranks.comm(r), &async), trncclSuccess);
    EXPECT_EQ(async, trncclSuccess);
  }
}

TEST(Api, BadAllReduceArgumentsAreRejectedWithAMessage) {
  Ranks& ranks = Ranks::get(2);
  trncclComm_t comm = ranks.comm(0);
  float buf[4] = {};
  EXPECT_EQ(trncclAllReduce(nullptr, buf, 4, trncclFloat, trncclSum, comm, nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("sendbuff is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclAllReduce(buf, nullptr, 4, trncclFloat, trncclSum, comm, nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("recvbuff is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclAllReduce(buf, buf, SIZE_MAX / 2, trncclFloat, trncclSum, comm, nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("overflows"), std::string::npos) << lastError();
  EXPECT_EQ(
      trncclAllReduce(buf, buf, 4, static_cast<trncclDataType_t>(99), trncclSum, comm, nullptr),
      trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid datatype 99"), std::string::npos) << lastError();
  EXPECT_EQ(
      trncclAllReduce(buf, buf, 4, trncclFloat, static_cast<trncclRedOp_t>(99), comm, nullptr),
      trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid reduction op 99"), std::string::npos) << lastError();
  EXPECT_EQ(trncclAllReduce(buf, buf, 4, trncclFloat, trncclSum, nullptr, nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("comm is NULL"), std::string::npos) << lastError();
  // Nothing was enqueued: the communicators still agree on the next call.
  ranks.run([&](int r) {
    float x[3] = {1.0f + r, 2.0f, 3.0f};
    ASSERT_EQ(trncclAllReduce(x, x, 3, trncclFloat, trncclSum, ranks.comm(r), ranks.stream(r)),
              trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    EXPECT_EQ(x[0], 3.0f);
    EXPECT_EQ(x[2], 6.0f);
  });
}

TEST(Api, BadInitArguments) {
  trncclComm_t comm = nullptr;
  trncclUniqueId id;
  ASSERT_EQ(trncclGetUniqueId(&id), trncclSuccess);
  EXPECT_EQ(trncclCommInitRank(&comm, 0, id, 0), trncclInvalidArgument);
  EXPECT_EQ(trncclCommInitRank(&comm, 2, id, 2), trncclInvalidArgument);
  EXPECT_NE(lastError().find("rank 2 not in [0, 2)"), std::string::npos) << lastError();
  EXPECT_EQ(trncclCommInitRank(nullptr, 1, id, 0), trncclInvalidArgument);
  trncclConfig_t config = {};  // not from TRNCCL_CONFIG_INITIALIZER
  EXPECT_EQ(trncclCommInitRankConfig(&comm, 1, id, 0, &config), trncclInvalidArgument);
  EXPECT_NE(lastError().find("TRNCCL_CONFIG_INITIALIZER"), std::string::npos) << lastError();
  trncclUniqueId garbage;
  for (size_t i = 0; i < sizeof(garbage.internal); ++i)
    garbage.internal[i] = static_cast<char>(i * 37);
  EXPECT_EQ(trncclCommInitRank(&comm, 1, garbage, 0), trncclInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(trncclCommInitAll(nullptr, 2, nullptr), trncclInvalidArgument);
  int badDevices[] = {0, 999};
  trncclComm_t comms[2];
  EXPECT_EQ(trncclCommInitAll(comms, 2, badDevices), trncclInvalidArgument);
}

TEST(Api, SingleRankWithConfigAndNonBlockingInit) {
  trncclUniqueId id;
  ASSERT_EQ(trncclGetUniqueId(&id), trncclSuccess);
  trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.timeoutMs = 10000;
  trncclComm_t comm = nullptr;
  trncclResult_t r = trncclCommInitRankConfig(&comm, 1, id, 0, &config);
  ASSERT_TRUE(r == trncclSuccess || r == trncclInProgress) << trncclGetErrorString(r);
  trncclResult_t state = trncclInProgress;
  for (int i = 0; i < 1000 && state == trncclInProgress; ++i) {
    ASSERT_EQ(trncclCommGetAsyncError(comm, &state), trncclSuccess);
    if (state == trncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(state, trncclSuccess);
  int64_t x[2] = {5, -7};
  ASSERT_EQ(trncclAllReduce(x, x, 2, trncclInt64, trncclMax, comm, nullptr), trncclSuccess);
  ASSERT_EQ(trnrtDeviceSynchronize(), trnrtSuccess);
  EXPECT_EQ(x[0], 5);
  EXPECT_EQ(x[1], -7);
  EXPECT_EQ(trncclCommFinalize(comm), trncclSuccess);
  EXPECT_EQ(trncclAllReduce(x, x, 2, trncclInt64, trncclMax, comm, nullptr), trncclInvalidUsage);
  EXPECT_EQ(trncclCommDestroy(comm), trncclSuccess);
}

TEST(Api, HostMemoryBuffersWork) {
  Ranks& ranks = Ranks::get(3);
  ranks.run([&](int r) {
    std::vector<int32_t> v(1000, r + 1);
    ASSERT_EQ(trncclAllReduce(v.data(), v.data(), v.size(), trncclInt32, trncclSum, ranks.comm(r),
                              ranks.stream(r)),
              trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    EXPECT_EQ(v.front(), 6);
    EXPECT_EQ(v.back(), 6);
  });
}

}  // namespace
}  // namespace trnccl::testing
