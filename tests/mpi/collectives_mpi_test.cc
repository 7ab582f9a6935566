// Every collective across real processes under mpirun: every datatype x valid op x count x
// in/out-of-place x root in {0, last}; each rank checks its own output against the independent
// reference, and where all ranks must agree, compares its bytes with rank 0's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_env.h"
#include "support/collective_cases.h"

namespace trnccl::testing {
namespace {

std::vector<Case> cases() {
  const int n = worldSize;
  std::vector<Case> out;
  std::vector<size_t> counts = {0, 1, 7, 4096 + 3};
  auto add = [&](Coll coll, trncclDataType_t type, trncclRedOp_t op, size_t count, int root) {
    for (bool inPlace : {false, true}) out.push_back({coll, n, type, op, count, inPlace, root});
  };
  for (int t = 0; t < trncclNumTypes; ++t) {
    auto type = static_cast<trncclDataType_t>(t);
    std::vector<size_t> arCounts = counts;
    if (n <= 4) arCounts.push_back((1u << 20) + 3);  // issue 2: 1M+3 for every type and op
    for (int o = 0; o < trncclNumOps; ++o) {
      auto op = static_cast<trncclRedOp_t>(o);
      for (size_t c : arCounts) add(Coll::kAllReduce, type, op, c, 0);
      for (size_t c : counts) {
        add(Coll::kReduceScatter, type, op, c, 0);
        add(Coll::kReduce, type, op, c, 0);
        if (n > 1) add(Coll::kReduce, type, op, c, n - 1);
      }
    }
    for (size_t c : counts) {
      add(Coll::kAllGather, type, trncclSum, c, 0);
      add(Coll::kAlltoAll, type, trncclSum, c, 0);
      add(Coll::kBroadcast, type, trncclSum, c, 0);
      if (n > 1) add(Coll::kBroadcast, type, trncclSum, c, n - 1);
      if (type == trncclInt8 || type == trncclBfloat16 || type == trncclFloat64) {
        for (Coll coll : {Coll::kGather, Coll::kScatter}) {
          add(coll, type, trncclSum, c, 0);
          if (n > 1) add(coll, type, trncclSum, c, n - 1);
        }
      }
    }
  }
  for (Coll coll : {Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce,
                    Coll::kAlltoAll, Coll::kGather, Coll::kScatter}) {
    add(coll, trncclFloat32, trncclSum, (1u << 20) + 3, n - 1);
  }
  // TRNCCL_TEST_COLLS=allreduce,allgather: only these collectives (the runs that force one
  // algorithm), with an odd large all-reduce for every op on float32 at any rank count.
  if (const char* only = std::getenv("TRNCCL_TEST_COLLS")) {
    const std::string list = std::string(",") + only + ",";
    std::erase_if(out, [&](const Case& c) {
      return list.find(std::string(",") + collName(c.coll) + ",") == std::string::npos;
    });
    if (list.find(",allreduce,") != std::string::npos && n > 4) {
      for (int o = 0; o < trncclNumOps; ++o) {
        add(Coll::kAllReduce, trncclFloat32, static_cast<trncclRedOp_t>(o), (1u << 18) + 3, 0);
      }
    }
  }
  if (std::getenv("TRNCCL_TEST_LONG") != nullptr) {  // the long sweep: 1M+3 for every case
    for (const Case& c : std::vector<Case>(out)) {
      if (c.count == 7 && c.coll != Coll::kAllReduce) {
        Case big = c;
        big.count = (1u << 20) + 3;
        out.push_back(big);
      }
    }
  }
  // TRNCCL_TEST_COLLS=allreduce,allgather: only those collectives (a forced algorithm's);
  // TRNCCL_TEST_MAX_COUNT=n: only counts up to n (16 processes on 2 cores).
  if (const char* only = std::getenv("TRNCCL_TEST_COLLS")) {
    const std::string list = std::string(",") + only + ",";
    std::erase_if(out, [&](const Case& c) {
      return list.find(std::string(",") + collName(c.coll) + ",") == std::string::npos;
    });
  }
  if (const char* most = std::getenv("TRNCCL_TEST_MAX_COUNT")) {
    const size_t limit = std::strtoull(most, nullptr, 10);
    std::erase_if(out, [&](const Case& c) { return c.count > limit; });
  }
  return out;
}

TEST(MpiCollectives, EveryCollectiveTypeOpCountPlacementAndRoot) {
  size_t failures = 0;
  for (const Case& c : cases()) {
    std::vector<unsigned char> out = runOnRank(c, worldRank, worldComm, worldStream);
    unsigned long long wrong = countWrong(c, worldRank, out), total = 0;
    if (sameOnAllRanks(c.coll)) {
      std::vector<unsigned char> root(out);
      MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
      wrong += root != out;
    }
    MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (total != 0 && ++failures <= 20) {
      ADD_FAILURE() << "np " << worldSize << " " << collName(c.coll) << " " << typeName(c.type)
                    << " " << opName(c.op) << " count " << c.count << " root " << c.root
                    << (c.inPlace ? " in place" : " out of place") << ": " << total << " wrong";
    }
  }
  EXPECT_EQ(failures, 0u);
}

TEST(MpiCollectives, ValidationFailsLocallyWithoutDesync) {
  float x = 1;
  EXPECT_EQ(trncclAllReduce(&x, &x, 1, static_cast<trncclDataType_t>(99), trncclSum, worldComm,
                            worldStream),
            trncclInvalidArgument);
  EXPECT_NE(std::string(trncclGetLastError(worldComm)).find("invalid datatype 99"),
            std::string::npos);
  ASSERT_EQ(trncclAllReduce(&x, &x, 1, trncclFloat, trncclSum, worldComm, worldStream),
            trncclSuccess);
  ASSERT_EQ(trnrtStreamSynchronize(worldStream), trnrtSuccess);
  EXPECT_EQ(x, static_cast<float>(worldSize));
}

// Each rank sends to rank+1 and receives from rank-1 in one group.
TEST(MpiCollectives, GroupedRingExchange) {
  const int next = (worldRank + 1) % worldSize, prev = (worldRank + worldSize - 1) % worldSize;
  std::vector<int32_t> send(500000 + 3, worldRank), recv(500000 + 3, -1);
  ASSERT_EQ(trncclGroupStart(), trncclSuccess);
  ASSERT_EQ(trncclRecv(recv.data(), recv.size(), trncclInt32, prev, worldComm, worldStream),
            trncclSuccess);
  ASSERT_EQ(trncclSend(send.data(), send.size(), trncclInt32, next, worldComm, worldStream),
            trncclSuccess);
  ASSERT_EQ(trncclGroupEnd(), trncclSuccess);
  ASSERT_EQ(trnrtStreamSynchronize(worldStream), trnrtSuccess) << trnrtGetLastErrorMessage();
  EXPECT_EQ(recv.front(), prev);
  EXPECT_EQ(recv.back(), prev);
}

}  // namespace
}  // namespace trnccl::testing
