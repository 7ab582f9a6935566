// One random collective of the soak (reliability anchor K1) and its reference, computed on the
// host independently of the library. Every rank draws the same sequence from the same seed, so
// the ranks agree on the call; inputs are small integers (every dtype below holds their sums
// exactly), so results are compared bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/reference.h"
#include "trnccl/trnccl.h"

namespace trnccl::fault {

enum class Coll { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll };

struct RandomCall {
  Coll coll = Coll::kAllReduce;
  trncclDataType_t type = trncclFloat32;
  trncclRedOp_t op = trncclSum;
  size_t count = 1;  // per rank (per block for all-gather, reduce-scatter, all-to-all)
  int root = 0;

  std::string describe() const {
    static const char* colls[] = {"allreduce", "reduce",        "broadcast",
                                  "allgather", "reducescatter", "alltoall"};
    return std::string(colls[static_cast<int>(coll)]) + " type " + std::to_string(type) + " op " +
           std::to_string(op) + " count " + std::to_string(count) + " root " + std::to_string(root);
  }
  // Elements of the send and the receive buffer.
  size_t sendElems(int nranks) const {
    bool blocks = coll == Coll::kReduceScatter || coll == Coll::kAlltoAll;
    return blocks ? count * static_cast<size_t>(nranks) : count;
  }
  size_t recvElems(int nranks) const {
    bool blocks = coll == Coll::kAllGather || coll == Coll::kAlltoAll;
    return blocks ? count * static_cast<size_t>(nranks) : count;
  }
};

inline constexpr size_t kMaxRandomCount = 65536 + 5;

inline RandomCall drawCall(std::mt19937_64& rng, int nranks) {
  static const trncclDataType_t types[] = {trncclInt32, trncclInt64, trncclFloat32, trncclFloat64};
  static const trncclRedOp_t ops[] = {trncclSum, trncclMax, trncclMin};
  static const size_t counts[] = {1, 7, 100, 1024 + 3, 8192, kMaxRandomCount};
  RandomCall c;
  c.coll = static_cast<Coll>(rng() % 6);
  c.type = types[rng() % 4];
  c.op = ops[rng() % 3];
  c.count = counts[rng() % 6];
  c.root = static_cast<int>(rng() % static_cast<uint64_t>(nranks));
  return c;
}

// Element i of `rank`'s send buffer in call number `seq`: an integer in [-8, 8].
inline int64_t inputOf(int rank, size_t i, long seq) {
  return static_cast<int64_t>((static_cast<size_t>(rank) * 5 + i * 7 + static_cast<size_t>(seq)) %
                              17) -
         8;
}

// Stores v at element i of `buf` as type t (support/reference.h's encoder).
inline void storeAs(trncclDataType_t t, std::vector<std::byte>& buf, size_t i, int64_t v) {
  testing::encode(t, static_cast<double>(v), buf.data() + i * testing::typeSize(t));
}

inline std::vector<std::byte> sendBufferOf(const RandomCall& c, int rank, int nranks, long seq) {
  std::vector<std::byte> buf(c.sendElems(nranks) * testing::typeSize(c.type));
  for (size_t i = 0; i < c.sendElems(nranks); ++i) storeAs(c.type, buf, i, inputOf(rank, i, seq));
  return buf;
}

inline int64_t reduceOver(const RandomCall& c, int nranks, size_t i, long seq) {
  int64_t acc = inputOf(0, i, seq);
  for (int r = 1; r < nranks; ++r) {
    int64_t v = inputOf(r, i, seq);
    acc = c.op == trncclSum ? acc + v : c.op == trncclMax ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

// What `rank`'s receive buffer must hold; `checked` is false where it holds nothing defined
// (a reduce's non-root ranks).
inline std::vector<std::byte> expectedOf(const RandomCall& c, int rank, int nranks, long seq,
                                         bool* checked) {
  std::vector<std::byte> buf(c.recvElems(nranks) * testing::typeSize(c.type));
  *checked = c.coll != Coll::kReduce || rank == c.root;
  for (size_t i = 0; i < c.recvElems(nranks); ++i) {
    size_t block = i / c.count, at = i % c.count;
    int64_t v = 0;
    switch (c.coll) {
      case Coll::kAllReduce:
      case Coll::kReduce:
        v = reduceOver(c, nranks, i, seq);
        break;
      case Coll::kBroadcast:
        v = inputOf(c.root, i, seq);
        break;
      case Coll::kAllGather:
        v = inputOf(static_cast<int>(block), at, seq);
        break;
      case Coll::kReduceScatter:
        v = reduceOver(c, nranks, static_cast<size_t>(rank) * c.count + i, seq);
        break;
      case Coll::kAlltoAll:
        v = inputOf(static_cast<int>(block), static_cast<size_t>(rank) * c.count + at, seq);
        break;
    }
    storeAs(c.type, buf, i, v);
  }
  return buf;
}

inline trncclResult_t issueCall(const RandomCall& c, const void* send, void* recv,
                                trncclComm_t comm, trnrtStream_t stream) {
  switch (c.coll) {
    case Coll::kAllReduce:
      return trncclAllReduce(send, recv, c.count, c.type, c.op, comm, stream);
    case Coll::kReduce:
      return trncclReduce(send, recv, c.count, c.type, c.op, c.root, comm, stream);
    case Coll::kBroadcast:
      return trncclBroadcast(send, recv, c.count, c.type, c.root, comm, stream);
    case Coll::kAllGather:
      return trncclAllGather(send, recv, c.count, c.type, comm, stream);
    case Coll::kReduceScatter:
      return trncclReduceScatter(send, recv, c.count, c.type, c.op, comm, stream);
    case Coll::kAlltoAll:
      return trncclAlltoAll(send, recv, c.count, c.type, comm, stream);
  }
  return trncclInvalidArgument;
}

}  // namespace trnccl::fault
