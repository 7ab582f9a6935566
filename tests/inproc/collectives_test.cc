// All-gather, reduce-scatter, broadcast, reduce and all-to-all over N ranks in one process:
// every datatype x valid op x count x rank count x in/out-of-place x root in {0, last}, against
// an independent reference (data movement bitwise; reductions as in allreduce_test.cc).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/ranks.h"
#include "support/reference.h"

namespace trnccl::testing {
namespace {

enum class Coll { kAllGather, kReduceScatter, kBroadcast, kReduce, kAlltoAll };
const char* collName(Coll c) {
  static const char* k[] = {"allgather", "reducescatter", "broadcast", "reduce", "alltoall"};
  return k[static_cast<int>(c)];
}

struct Case {
  Coll coll;
  int nranks;
  trncclDataType_t type;
  trncclRedOp_t op;  // sum for data movement
  size_t count;      // the API's count argument
  bool inPlace;
  int root;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("n{}_{}_{}_{}_c{}_{}_root{}", c.nranks, collName(c.coll), typeName(c.type),
                     opName(c.op), c.count, c.inPlace ? "inplace" : "outofplace", c.root);
}

// Element counts of the send and receive buffers on one rank.
size_t sendElems(const Case& c) {
  return (c.coll == Coll::kReduceScatter || c.coll == Coll::kAlltoAll) ? c.count * c.nranks : c.count;
}
size_t recvElems(const Case& c) {
  return (c.coll == Coll::kAllGather || c.coll == Coll::kAlltoAll) ? c.count * c.nranks : c.count;
}

// Where rank r's send data sits inside its receive buffer for in-place calls (NCCL's rules).
size_t inPlaceSendOffset(const Case& c, int r) {
  if (c.coll == Coll::kAllGather) return r * c.count;
  return 0;  // reduce-scatter is handled by offsetting recv instead; others coincide
}

void encodeInput(const Case& c, int r, std::vector<unsigned char>& buf) {
  size_t elem = typeSize(c.type);
  for (size_t i = 0; i < sendElems(c); ++i) encode(c.type, inputValue(c.op, r, i), buf.data() + i * elem);
}

bool elementOk(const Case& c, const unsigned char* got, int srcRank, size_t srcIndex, bool reduced) {
  size_t elem = typeSize(c.type);
  if (!reduced) {
    unsigned char expected[8];
    encode(c.type, inputValue(c.op, srcRank, srcIndex), expected);
    return std::memcmp(expected, got, elem) == 0;
  }
  if (isFloat(c.type)) {
    auto e = expectedFloat(c.type, c.op, c.nranks, srcIndex);
    return std::fabs(decodeFloat(c.type, got, 0) - e.value) <= e.tolerance;
  }
  unsigned char expected[8];
  expectedInteger(c.type, c.op, c.nranks, srcIndex, expected);
  return std::memcmp(expected, got, elem) == 0;
}

// Counts wrong elements of rank r's output.
size_t countWrong(const Case& c, int r, const std::vector<unsigned char>& out) {
  size_t wrong = 0, elem = typeSize(c.type);
  auto check = [&](size_t i, int srcRank, size_t srcIndex, bool reduced) {
    if (!elementOk(c, out.data() + i * elem, srcRank, srcIndex, reduced)) {
      if (wrong < 3) ADD_FAILURE() << "rank " << r << " element " << i;
      ++wrong;
    }
  };
  for (size_t i = 0; i < recvElems(c); ++i) {
    switch (c.coll) {
      case Coll::kAllGather: check(i, static_cast<int>(i / c.count), i % c.count, false); break;
      case Coll::kReduceScatter: check(i, 0, r * c.count + i, true); break;
      case Coll::kBroadcast: check(i, c.root, i, false); break;
      case Coll::kReduce: if (r == c.root) check(i, 0, i, true); break;
      case Coll::kAlltoAll: check(i, static_cast<int>(i / c.count), r * c.count + i % c.count, false); break;
    }
  }
  return wrong;
}

trncclResult_t call(const Case& c, const void* send, void* recv, trncclComm_t comm, trnrtStream_t s) {
  switch (c.coll) {
    case Coll::kAllGather: return trncclAllGather(send, recv, c.count, c.type, comm, s);
    case Coll::kReduceScatter: return trncclReduceScatter(send, recv, c.count, c.type, c.op, comm, s);
    case Coll::kBroadcast: return trncclBroadcast(send, recv, c.count, c.type, c.root, comm, s);
    case Coll::kReduce: return trncclReduce(send, recv, c.count, c.type, c.op, c.root, comm, s);
    case Coll::kAlltoAll: return trncclAlltoAll(send, recv, c.count, c.type, comm, s);
  }
  return trncclInternalError;
}

class Collectives : public ::testing::TestWithParam<Case> {};

TEST_P(Collectives, MatchReference) {
  const Case c = GetParam();
  Ranks& ranks = Ranks::get(c.nranks);
  const size_t elem = typeSize(c.type);
  const size_t sendBytes = sendElems(c) * elem, recvBytes = recvElems(c) * elem;
  std::vector<std::vector<unsigned char>> out(c.nranks, std::vector<unsigned char>(recvBytes));
  std::vector<size_t> wrong(c.nranks);
  ranks.run([&](int r) {
    std::vector<unsigned char> in(sendBytes);
    encodeInput(c, r, in);
    // One device allocation big enough for either layout.
    size_t total = std::max(sendBytes, recvBytes) + sendBytes + recvBytes;
    void* base = nullptr;
    ASSERT_EQ(trnrtMalloc(&base, total), trnrtSuccess);
    auto* mem = static_cast<unsigned char*>(base);
    unsigned char *send = mem, *recv = mem + sendBytes;
    if (c.inPlace) {
      recv = mem;
      send = mem + inPlaceSendOffset(c, r) * elem;
      if (c.coll == Coll::kReduceScatter) recv = mem + r * c.count * elem;
    }
    ASSERT_EQ(trnrtMemcpy(send, in.data(), sendBytes, trnrtMemcpyHostToDevice), trnrtSuccess);
    ASSERT_EQ(call(c, send, recv, ranks.comm(r), ranks.stream(r)), trncclSuccess)
        << trncclGetLastError(ranks.comm(r));
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess) << trnrtGetLastErrorMessage();
    ASSERT_EQ(trnrtMemcpy(out[r].data(), recv, recvBytes, trnrtMemcpyDeviceToHost), trnrtSuccess);
    trnrtFree(base);
  });
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(countWrong(c, r, out[r]), 0u) << "rank " << r;
  if (c.coll == Coll::kAllGather || c.coll == Coll::kBroadcast) {
    for (int r = 1; r < c.nranks; ++r) EXPECT_TRUE(out[r] == out[0]) << "rank " << r;
  }
}

std::vector<Case> matrix() {
  std::vector<Case> cases;
  const size_t counts[] = {0, 1, 7, 4096 + 3};
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (int t = 0; t < trncclNumTypes; ++t) {
      auto type = static_cast<trncclDataType_t>(t);
      for (size_t count : counts) {
        for (bool inPlace : {false, true}) {
          cases.push_back({Coll::kAllGather, n, type, trncclSum, count, inPlace, 0});
          cases.push_back({Coll::kAlltoAll, n, type, trncclSum, count, inPlace, 0});
          for (int root : {0, n - 1}) {
            if (root == n - 1 && n == 1) continue;
            cases.push_back({Coll::kBroadcast, n, type, trncclSum, count, inPlace, root});
          }
          for (int o = 0; o < trncclNumOps; ++o) {
            auto op = static_cast<trncclRedOp_t>(o);
            cases.push_back({Coll::kReduceScatter, n, type, op, count, inPlace, 0});
            for (int root : {0, n - 1}) {
              if (root == n - 1 && n == 1) continue;
              cases.push_back({Coll::kReduce, n, type, op, count, inPlace, root});
            }
          }
        }
      }
    }
  }
  // Large and odd: several pipeline slices per block.
  for (int n : {3, 4}) {
    for (Coll coll : {Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce,
                      Coll::kAlltoAll}) {
      for (bool inPlace : {false, true}) {
        cases.push_back({coll, n, trncclFloat32, trncclSum, (1u << 20) + 3, inPlace, n - 1});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Collectives, ::testing::ValuesIn(matrix()), caseName);

}  // namespace
}  // namespace trnccl::testing
