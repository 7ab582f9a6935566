// Test cases for every collective, shared by the in-process and the mpirun suites: buffers laid
// out per NCCL's in-place rules, inputs from support/reference.h, and an independent check of
// each rank's output (data movement bitwise; reductions against the double reference).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "support/reference.h"

namespace trnccl::testing {

enum class Coll {
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kAllReduce,
  kGather,
  kScatter
};
inline const char* collName(Coll c) {
  static const char* k[] = {"allgather", "reducescatter", "broadcast", "reduce",
                            "alltoall",  "allreduce",     "gather",    "scatter"};
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

inline std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("n{}_{}_{}_{}_c{}_{}_root{}", c.nranks, collName(c.coll), typeName(c.type),
                     opName(c.op), c.count, c.inPlace ? "inplace" : "outofplace", c.root);
}

// Element counts of the send and receive buffers on one rank.
inline size_t sendElems(const Case& c) {
  return (c.coll == Coll::kReduceScatter || c.coll == Coll::kAlltoAll || c.coll == Coll::kScatter)
             ? c.count * c.nranks
             : c.count;
}
inline size_t recvElems(const Case& c) {
  return (c.coll == Coll::kAllGather || c.coll == Coll::kAlltoAll || c.coll == Coll::kGather)
             ? c.count * c.nranks
             : c.count;
}

// Where rank r's send data sits inside its receive buffer for in-place calls (NCCL's rules;
// gather's holds on the root, where it matters).
inline size_t inPlaceSendOffset(const Case& c, int r) {
  if (c.coll == Coll::kAllGather || c.coll == Coll::kGather) return r * c.count;
  return 0;  // reduce-scatter and scatter offset recv instead; others coincide
}

inline void encodeInput(const Case& c, int r, std::vector<unsigned char>& buf) {
  encodeInputs(c.type, c.op, r, buf.data(), sendElems(c));
}

// Counts wrong elements of rank r's output: moved data bitwise against the source rank's input,
// reductions against the reference (both one input period long, see reference.h).
inline size_t countWrong(const Case& c, int r, const std::vector<unsigned char>& out) {
  const size_t elem = typeSize(c.type);
  const ReducedReference reduced(c.type, c.op, c.nranks);
  std::vector<std::vector<unsigned char>> inputs(c.nranks);  // one period per source rank
  auto input = [&](int rank, size_t i) {
    std::vector<unsigned char>& period = inputs[rank];
    if (period.empty()) {
      period.resize(kInputPeriod * elem);
      encodeInputs(c.type, c.op, rank, period.data(), kInputPeriod);
    }
    return period.data() + (i % kInputPeriod) * elem;
  };
  size_t wrong = 0;
  auto check = [&](size_t i, int srcRank, size_t srcIndex, bool isReduced) {
    const unsigned char* got = out.data() + i * elem;
    bool ok = isReduced ? reduced.ok(got, srcIndex)
                        : std::memcmp(input(srcRank, srcIndex), got, elem) == 0;
    if (!ok) {
      if (wrong < 3) ADD_FAILURE() << "rank " << r << " element " << i;
      ++wrong;
    }
  };
  for (size_t i = 0; i < recvElems(c); ++i) {
    switch (c.coll) {
      case Coll::kAllGather:
        check(i, static_cast<int>(i / c.count), i % c.count, false);
        break;
      case Coll::kReduceScatter:
        check(i, 0, r * c.count + i, true);
        break;
      case Coll::kBroadcast:
        check(i, c.root, i, false);
        break;
      case Coll::kReduce:
        if (r == c.root) check(i, 0, i, true);
        break;
      case Coll::kAlltoAll:
        check(i, static_cast<int>(i / c.count), r * c.count + i % c.count, false);
        break;
      case Coll::kAllReduce:
        check(i, 0, i, true);
        break;
      case Coll::kGather:
        if (r == c.root) check(i, static_cast<int>(i / c.count), i % c.count, false);
        break;
      case Coll::kScatter:
        check(i, c.root, r * c.count + i, false);
        break;
    }
  }
  return wrong;
}

inline trncclResult_t call(const Case& c, const void* send, void* recv, trncclComm_t comm,
                           trnrtStream_t s) {
  switch (c.coll) {
    case Coll::kAllGather:
      return trncclAllGather(send, recv, c.count, c.type, comm, s);
    case Coll::kReduceScatter:
      return trncclReduceScatter(send, recv, c.count, c.type, c.op, comm, s);
    case Coll::kBroadcast:
      return trncclBroadcast(send, recv, c.count, c.type, c.root, comm, s);
    case Coll::kReduce:
      return trncclReduce(send, recv, c.count, c.type, c.op, c.root, comm, s);
    case Coll::kAlltoAll:
      return trncclAlltoAll(send, recv, c.count, c.type, comm, s);
    case Coll::kAllReduce:
      return trncclAllReduce(send, recv, c.count, c.type, c.op, comm, s);
    case Coll::kGather:
      return trncclGather(send, recv, c.count, c.type, c.root, comm, s);
    case Coll::kScatter:
      return trncclScatter(send, recv, c.count, c.type, c.root, comm, s);
  }
  return trncclInternalError;
}

// Runs case c as rank r (buffers in device memory, laid out per the in-place rules); returns
// the rank's output buffer.
inline std::vector<unsigned char> runOnRank(const Case& c, int r, trncclComm_t comm,
                                            trnrtStream_t stream) {
  const size_t elem = typeSize(c.type);
  const size_t sendBytes = sendElems(c) * elem, recvBytes = recvElems(c) * elem;
  std::vector<unsigned char> in(sendBytes), out(recvBytes);
  encodeInput(c, r, in);
  void* base = nullptr;
  EXPECT_EQ(trnrtMalloc(&base, std::max(sendBytes, recvBytes) + sendBytes + recvBytes),
            trnrtSuccess);
  auto* mem = static_cast<unsigned char*>(base);
  unsigned char *send = mem, *recv = mem + sendBytes;
  if (c.inPlace) {
    recv = mem;
    send = mem + inPlaceSendOffset(c, r) * elem;
    if (c.coll == Coll::kReduceScatter || c.coll == Coll::kScatter) {
      recv = mem + r * c.count * elem;
    }
  }
  EXPECT_EQ(trnrtMemcpy(send, in.data(), sendBytes, trnrtMemcpyHostToDevice), trnrtSuccess);
  EXPECT_EQ(call(c, send, recv, comm, stream), trncclSuccess) << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  EXPECT_EQ(trnrtMemcpy(out.data(), recv, recvBytes, trnrtMemcpyDeviceToHost), trnrtSuccess);
  trnrtFree(base);
  return out;
}

// Whether every rank's output must be bitwise identical.
inline bool sameOnAllRanks(Coll c) {
  return c == Coll::kAllGather || c == Coll::kBroadcast || c == Coll::kAllReduce;
}

}  // namespace trnccl::testing
