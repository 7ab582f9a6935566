// The NCCL API beyond the core set, over N ranks in one process (the mpirun suite runs the same
// cases from support/api_cases.h): PreMulSum operators in every reducing collective, type,
// residence and placement, and where they may not be used; trncclBcast; all-to-all-v through
// grouped send/recv; the arguments gather and scatter refuse. (Gather and scatter themselves
// are in the collectives matrix.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/api_cases.h"
#include "support/ranks.h"

namespace trnccl::testing {
namespace {

std::string lastError(trncclComm_t comm = nullptr) { return trncclGetLastError(comm); }

TEST(NcclParity, PreMulSumEveryCollectiveTypeResidenceAndPlacement) {
  for (int n : {1, 2, 3, 4}) {
    Ranks& ranks = Ranks::get(n);
    for (PreMulColl coll :
         {PreMulColl::kAllReduce, PreMulColl::kReduceScatter, PreMulColl::kReduce}) {
      for (trncclDataType_t t : {trncclFloat32, trncclBfloat16, trncclFloat16, trncclFloat64,
                                 trncclInt32, trncclInt64}) {
        for (auto residence : {trncclScalarDevice, trncclScalarHostImmediate}) {
          for (size_t count : {size_t{0}, size_t{7}, size_t{4099}}) {
            for (bool inPlace : {false, true}) {
              std::vector<size_t> bad(n);
              ranks.run([&](int r) {
                bad[r] = runPreMulSum(ranks.comm(r), ranks.stream(r), r, n, coll, t, residence,
                                      count, inPlace);
              });
              for (int r = 0; r < n; ++r) {
                EXPECT_EQ(bad[r], 0u) << "n " << n << " coll " << static_cast<int>(coll) << " "
                                      << typeName(t) << " residence " << residence << " count "
                                      << count << (inPlace ? " in place" : "") << " rank " << r;
              }
            }
          }
        }
      }
    }
  }
}

// Inside a group the operator is resolved when the call is made: destroying it before
// trncclGroupEnd is fine, as in NCCL.
TEST(NcclParity, PreMulSumInsideAGroup) {
  Ranks& ranks = Ranks::get(3);
  ranks.run([&](int r) {
    DeviceBuffer a(4 * sizeof(float)), b(4 * sizeof(float));
    auto* x = reinterpret_cast<float*>(a.get());
    auto* y = reinterpret_cast<float*>(b.get());
    for (int i = 0; i < 4; ++i) x[i] = y[i] = static_cast<float>(r + i);
    float two = 2, half = 0.5f;
    trncclRedOp_t times2, halved;
    trncclComm_t c = ranks.comm(r);
    ASSERT_EQ(trncclRedOpCreatePreMulSum(&times2, &two, trncclFloat, trncclScalarHostImmediate, c),
              trncclSuccess);
    ASSERT_EQ(trncclRedOpCreatePreMulSum(&halved, &half, trncclFloat, trncclScalarHostImmediate, c),
              trncclSuccess);
    EXPECT_NE(times2, halved);
    ASSERT_EQ(trncclGroupStart(), trncclSuccess);
    ASSERT_EQ(trncclAllReduce(x, x, 4, trncclFloat, times2, c, ranks.stream(r)), trncclSuccess);
    ASSERT_EQ(trncclAllReduce(y, y, 4, trncclFloat, halved, c, ranks.stream(r)), trncclSuccess);
    EXPECT_EQ(trncclRedOpDestroy(times2, c), trncclSuccess);
    EXPECT_EQ(trncclRedOpDestroy(halved, c), trncclSuccess);
    ASSERT_EQ(trncclGroupEnd(), trncclSuccess) << lastError(c);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(x[i], 2.0f * (3 + 3 * i));  // sum over r of 2 (r + i)
      EXPECT_EQ(y[i], 0.5f * (3 + 3 * i));
    }
  });
}

TEST(NcclParity, PreMulSumMisuseIsRejectedWithAMessage) {
  Ranks& ranks = Ranks::get(2);
  trncclComm_t c = ranks.comm(0), other = ranks.comm(1);
  float scalar = 2, buf[2] = {};
  trncclRedOp_t op;
  EXPECT_EQ(trncclRedOpCreatePreMulSum(&op, nullptr, trncclFloat, trncclScalarDevice, c),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("scalar is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclRedOpCreatePreMulSum(&op, &scalar, trncclFloat,
                                       static_cast<trncclScalarResidence_t>(2), c),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid residence 2"), std::string::npos) << lastError();
  EXPECT_EQ(trncclRedOpCreatePreMulSum(&op, &scalar, static_cast<trncclDataType_t>(40),
                                       trncclScalarDevice, c),
            trncclInvalidArgument);
  EXPECT_EQ(trncclRedOpCreatePreMulSum(&op, &scalar, trncclFloat, trncclScalarDevice, nullptr),
            trncclInvalidArgument);
  ASSERT_EQ(trncclRedOpCreatePreMulSum(&op, &scalar, trncclFloat, trncclScalarHostImmediate, c),
            trncclSuccess);
  // Another type than the operator's.
  EXPECT_EQ(trncclAllReduce(buf, buf, 2, trncclInt32, op, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("was created for float, the call is of int32"), std::string::npos)
      << lastError();
  // Another communicator's operator (it has none).
  EXPECT_EQ(trncclReduceScatter(buf, buf, 1, trncclFloat, op, other, ranks.stream(1)),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid reduction op 5"), std::string::npos) << lastError();
  EXPECT_EQ(trncclRedOpDestroy(trncclSum, c), trncclInvalidArgument);
  EXPECT_NE(lastError().find("built-in"), std::string::npos) << lastError();
  EXPECT_EQ(trncclRedOpDestroy(op, other), trncclInvalidArgument);
  EXPECT_EQ(trncclRedOpDestroy(op, c), trncclSuccess);
  EXPECT_EQ(trncclRedOpDestroy(op, c), trncclInvalidArgument);
  EXPECT_NE(lastError().find("no live operator"), std::string::npos) << lastError();
  // A destroyed operator is no longer accepted.
  EXPECT_EQ(trncclReduce(buf, buf, 2, trncclFloat, op, 0, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_EQ(
      trncclAllReduce(buf, buf, 2, trncclFloat, static_cast<trncclRedOp_t>(-1), c, ranks.stream(0)),
      trncclInvalidArgument);
  // Nothing was enqueued: the communicators still agree on the next call.
  ranks.run([&](int r) {
    float x = 1.0f + r;
    ASSERT_EQ(trncclAllReduce(&x, &x, 1, trncclFloat, trncclSum, ranks.comm(r), ranks.stream(r)),
              trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    EXPECT_EQ(x, 3.0f);
  });
}

TEST(NcclParity, LegacyInPlaceBcast) {
  for (int n : {1, 2, 3, 5}) {
    Ranks& ranks = Ranks::get(n);
    for (int root : {0, n - 1}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{100003}}) {
        std::vector<size_t> bad(n);
        ranks.run([&](int r) {
          bad[r] = runBcast(ranks.comm(r), ranks.stream(r), r, root, trncclFloat16, count);
        });
        for (int r = 0; r < n; ++r) EXPECT_EQ(bad[r], 0u) << "n " << n << " root " << root;
      }
    }
  }
}

TEST(NcclParity, AlltoAllvThroughGroupedSendRecv) {
  for (int n : {1, 2, 3, 4, 5}) {
    Ranks& ranks = Ranks::get(n);
    for (size_t scale : {size_t{1}, size_t{70001}}) {
      std::vector<size_t> bad(n);
      ranks.run([&](int r) { bad[r] = runAlltoAllv(ranks.comm(r), ranks.stream(r), r, n, scale); });
      for (int r = 0; r < n; ++r) EXPECT_EQ(bad[r], 0u) << "n " << n << " scale " << scale;
    }
  }
}

// NULL where NCCL allows it: gather's recvbuff and scatter's sendbuff off the root.
TEST(NcclParity, GatherAndScatterWithoutTheRootOnlyBuffer) {
  for (int n : {1, 2, 3, 5}) {
    Ranks& ranks = Ranks::get(n);
    for (int root : {0, n - 1}) {
      for (bool inPlace : {false, true}) {
        std::vector<size_t> bad(n);
        ranks.run([&](int r) {
          bad[r] =
              runGather(ranks.comm(r), ranks.stream(r), r, n, root, trncclBfloat16, 4099, inPlace) +
              runScatter(ranks.comm(r), ranks.stream(r), r, n, root, trncclFloat64, 4099, inPlace);
        });
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(bad[r], 0u) << "n " << n << " root " << root << (inPlace ? " in place" : "");
        }
      }
    }
  }
}

TEST(NcclParity, GatherAndScatterRefuseBadArguments) {
  Ranks& ranks = Ranks::get(2);
  trncclComm_t c = ranks.comm(0);
  float buf[4] = {};
  EXPECT_EQ(trncclGather(buf, buf, 2, trncclFloat, 2, c, ranks.stream(0)), trncclInvalidArgument);
  EXPECT_NE(lastError().find("root 2 not in [0, 2)"), std::string::npos) << lastError();
  EXPECT_EQ(trncclGather(buf, nullptr, 2, trncclFloat, 0, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("recvbuff is NULL on the root"), std::string::npos) << lastError();
  EXPECT_EQ(trncclGather(nullptr, buf, 2, trncclFloat, 1, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("trncclGather: sendbuff is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclScatter(nullptr, buf, 2, trncclFloat, 0, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("sendbuff is NULL on the root"), std::string::npos) << lastError();
  EXPECT_EQ(trncclScatter(buf, nullptr, 2, trncclFloat, 1, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_EQ(trncclScatter(buf, buf, 2, static_cast<trncclDataType_t>(77), 0, c, ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("invalid datatype 77"), std::string::npos) << lastError();
  EXPECT_EQ(trncclBcast(nullptr, 2, trncclFloat, 0, c, ranks.stream(0)), trncclInvalidArgument);
}

}  // namespace
}  // namespace trnccl::testing
