// All-reduce over N ranks in one process: every datatype x op x count x rank count, in place and
// out of place, against an independent reference; every rank bitwise identical to rank 0.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#include "support/ranks.h"
#include "support/reference.h"

namespace trnccl::testing {
namespace {

struct Case {
  int nranks;
  trncclDataType_t type;
  trncclRedOp_t op;
  size_t count;
  bool inPlace;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("n{}_{}_{}_c{}_{}", c.nranks, typeName(c.type), opName(c.op), c.count,
                     c.inPlace ? "inplace" : "outofplace");
}

// Checks rank 0's output against the reference; returns the number of wrong elements.
size_t countWrong(const Case& c, const std::vector<unsigned char>& out) {
  const size_t elem = typeSize(c.type);
  const ReducedReference reference(c.type, c.op, c.nranks);
  size_t wrong = 0;
  for (size_t i = 0; i < c.count; ++i) {
    if (reference.ok(out.data() + i * elem, i)) continue;
    if (wrong < 5) {
      if (isFloat(c.type)) {
        ADD_FAILURE() << "element " << i << ": got " << decodeFloat(c.type, out.data(), i)
                      << " expected " << reference.expected(i).value;
      } else {
        ADD_FAILURE() << "element " << i << " differs";
      }
    }
    ++wrong;
  }
  return wrong;
}

class AllReduce : public ::testing::TestWithParam<Case> {};

TEST_P(AllReduce, MatchesReferenceOnEveryRank) {
  const Case c = GetParam();
  Ranks& ranks = Ranks::get(c.nranks);
  const size_t bytes = c.count * typeSize(c.type);
  std::vector<std::vector<unsigned char>> out(c.nranks, std::vector<unsigned char>(bytes));
  ranks.run([&](int r) {
    std::vector<unsigned char> in(bytes);
    encodeInputs(c.type, c.op, r, in.data(), c.count);
    void *send = nullptr, *recv = nullptr;
    ASSERT_EQ(trnrtMalloc(&send, bytes), trnrtSuccess);
    recv = send;
    if (!c.inPlace) {
      ASSERT_EQ(trnrtMalloc(&recv, bytes), trnrtSuccess);
    }
    ASSERT_EQ(trnrtMemcpy(send, in.data(), bytes, trnrtMemcpyHostToDevice), trnrtSuccess);
    ASSERT_EQ(trncclAllReduce(send, recv, c.count, c.type, c.op, ranks.comm(r), ranks.stream(r)),
              trncclSuccess)
        << trncclGetLastError(ranks.comm(r));
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess) << trnrtGetLastErrorMessage();
    ASSERT_EQ(trnrtMemcpy(out[r].data(), recv, bytes, trnrtMemcpyDeviceToHost), trnrtSuccess);
    trnrtFree(send);
    if (!c.inPlace) trnrtFree(recv);
  });
  EXPECT_EQ(countWrong(c, out[0]), 0u);
  for (int r = 1; r < c.nranks; ++r) {
    EXPECT_TRUE(out[r] == out[0]) << "rank " << r << " differs from rank 0";
  }
}

std::vector<Case> matrix() {
  std::vector<Case> cases;
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (int t = 0; t < trncclNumTypes; ++t) {
      for (int o = 0; o < trncclNumOps; ++o) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{4096 + 3}}) {
          for (bool inPlace : {false, true}) {
            cases.push_back({n, static_cast<trncclDataType_t>(t), static_cast<trncclRedOp_t>(o),
                             count, inPlace});
          }
        }
      }
    }
  }
  if (std::getenv("TRNCCL_TEST_LONG") != nullptr) {  // the long sweep: 1M+3 everywhere
    for (const Case& c : std::vector<Case>(cases)) {
      if (c.count == 7) cases.push_back({c.nranks, c.type, c.op, (1u << 20) + 3, c.inPlace});
    }
    return cases;
  }
  // Large and odd: several pipeline iterations with uneven blocks.
  for (int n : {2, 3, 4, 8}) {
    for (auto t : {trncclFloat32, trncclBfloat16, trncclInt8, trncclFloat64}) {
      for (bool inPlace : {false, true})
        cases.push_back({n, t, trncclSum, (1u << 20) + 3, inPlace});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, AllReduce, ::testing::ValuesIn(matrix()), caseName);

// Regression: shm within emulated instances of 2 ranks, the network transport (ofi when built,
// with manual data progress) across them. A rank's ofi send must keep moving while its next
// ring step waits on its shm peer; the executor used to poll only the current step's
// connections, so the 1-byte ring (only block 0 non-empty) hung until the timeout.
TEST(AllReduceMixedTransports, RingCompletesWhenLaterStepsUseOtherConnections) {
  constexpr int n = 8;
  setenv("TRNCCL_EMU_RANKS_PER_NODE", "2", 1);
  setenv("TRNCCL_TIMEOUT_MS", "10000", 1);
  setenv("TRNCCL_ALGO", "ring", 1);
  {
    Ranks ranks(n);
    unsetenv("TRNCCL_EMU_RANKS_PER_NODE");
    unsetenv("TRNCCL_TIMEOUT_MS");
    for (size_t count : {size_t{1}, size_t{7}, size_t{4096 + 3}}) {
      const Case c{n, trncclInt8, trncclSum, count, false};
      std::vector<std::vector<unsigned char>> out(n, std::vector<unsigned char>(count));
      ranks.run([&](int r) {
        std::vector<unsigned char> in(count);
        encodeInputs(c.type, c.op, r, in.data(), count);
        void *send = nullptr, *recv = nullptr;
        ASSERT_EQ(trnrtMalloc(&send, count), trnrtSuccess);
        ASSERT_EQ(trnrtMalloc(&recv, count), trnrtSuccess);
        ASSERT_EQ(trnrtMemcpy(send, in.data(), count, trnrtMemcpyHostToDevice), trnrtSuccess);
        ASSERT_EQ(trncclAllReduce(send, recv, count, c.type, c.op, ranks.comm(r), ranks.stream(r)),
                  trncclSuccess)
            << trncclGetLastError(ranks.comm(r));
        EXPECT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess)
            << "count " << count << ": " << trnrtGetLastErrorMessage();
        ASSERT_EQ(trnrtMemcpy(out[r].data(), recv, count, trnrtMemcpyDeviceToHost), trnrtSuccess);
        trnrtFree(send);
        trnrtFree(recv);
      });
      EXPECT_EQ(countWrong(c, out[0]), 0u) << "count " << count;
      for (int r = 1; r < n; ++r)
        EXPECT_TRUE(out[r] == out[0]) << "rank " << r << ", count " << count;
    }
  }
  unsetenv("TRNCCL_ALGO");
}

}  // namespace
}  // namespace trnccl::testing
