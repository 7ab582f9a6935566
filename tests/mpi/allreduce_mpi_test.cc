// All-reduce across real processes under mpirun: every datatype x op x count x in/out-of-place,
// checked against the independent reference on every rank, and every rank's bytes compared with
// rank 0's. MPI only carries the unique id and the verdicts; the data moves through trnccl.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <vector>

#include "support/reference.h"
#include "trnccl/trnccl.h"

namespace trnccl::testing {
namespace {

int worldRank = 0, worldSize = 1;
trncclComm_t comm = nullptr;
trnrtStream_t stream = nullptr;

struct Case {
  trncclDataType_t type;
  trncclRedOp_t op;
  size_t count;
  bool inPlace;
};

std::vector<Case> cases() {
  std::vector<size_t> counts = {0, 1, 7, 4096 + 3};
  if (worldSize <= 4) counts.push_back((1u << 20) + 3);
  std::vector<Case> out;
  for (int t = 0; t < trncclNumTypes; ++t)
    for (int o = 0; o < trncclNumOps; ++o)
      for (size_t c : counts)
        for (bool inPlace : {false, true})
          out.push_back({static_cast<trncclDataType_t>(t), static_cast<trncclRedOp_t>(o), c, inPlace});
  return out;
}

// Runs one case on this rank; returns the count of wrong elements (reference and rank 0).
size_t runCase(const Case& c) {
  const size_t elem = typeSize(c.type), bytes = c.count * elem;
  std::vector<unsigned char> in(bytes), out(bytes);
  for (size_t i = 0; i < c.count; ++i) encode(c.type, inputValue(c.op, worldRank, i), in.data() + i * elem);
  void *send = nullptr, *recv = nullptr;
  EXPECT_EQ(trnrtMalloc(&send, bytes), trnrtSuccess);
  recv = send;
  if (!c.inPlace) EXPECT_EQ(trnrtMalloc(&recv, bytes), trnrtSuccess);
  EXPECT_EQ(trnrtMemcpy(send, in.data(), bytes, trnrtMemcpyHostToDevice), trnrtSuccess);
  EXPECT_EQ(trncclAllReduce(send, recv, c.count, c.type, c.op, comm, stream), trncclSuccess)
      << trncclGetLastError(comm);
  EXPECT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess) << trnrtGetLastErrorMessage();
  EXPECT_EQ(trnrtMemcpy(out.data(), recv, bytes, trnrtMemcpyDeviceToHost), trnrtSuccess);
  trnrtFree(send);
  if (!c.inPlace) trnrtFree(recv);

  size_t wrong = 0;
  for (size_t i = 0; i < c.count; ++i) {
    if (isFloat(c.type)) {
      auto e = expectedFloat(c.type, c.op, worldSize, i);
      wrong += !(std::fabs(decodeFloat(c.type, out.data(), i) - e.value) <= e.tolerance);
    } else {
      unsigned char expected[8];
      expectedInteger(c.type, c.op, worldSize, i, expected);
      wrong += std::memcmp(expected, out.data() + i * elem, elem) != 0;
    }
  }
  // Bitwise agreement with rank 0.
  std::vector<unsigned char> root(out);
  MPI_Bcast(root.data(), static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (root != out) ++wrong;
  return wrong;
}

TEST(MpiAllReduce, EveryTypeOpCountAndPlacement) {
  for (const Case& c : cases()) {
    unsigned long long wrong = runCase(c), total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(total, 0u) << "np " << worldSize << " " << typeName(c.type) << " " << opName(c.op)
                         << " count " << c.count << (c.inPlace ? " in place" : " out of place");
  }
}

TEST(MpiAllReduce, ValidationFailsLocallyWithoutDesync) {
  float x = 1;
  EXPECT_EQ(trncclAllReduce(&x, &x, 1, static_cast<trncclDataType_t>(99), trncclSum, comm, stream),
            trncclInvalidArgument);
  EXPECT_NE(std::string(trncclGetLastError(comm)).find("invalid datatype 99"), std::string::npos);
  ASSERT_EQ(trncclAllReduce(&x, &x, 1, trncclFloat, trncclSum, comm, stream), trncclSuccess);
  ASSERT_EQ(trnrtStreamSynchronize(stream), trnrtSuccess);
  EXPECT_EQ(x, static_cast<float>(worldSize));
}

}  // namespace
}  // namespace trnccl::testing

int main(int argc, char** argv) {
  using namespace trnccl::testing;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  ::testing::InitGoogleTest(&argc, argv);
  if (worldRank != 0) {
    delete ::testing::UnitTest::GetInstance()->listeners().Release(
        ::testing::UnitTest::GetInstance()->listeners().default_result_printer());
  }
  trncclUniqueId id;
  if (worldRank == 0 && trncclGetUniqueId(&id) != trncclSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (trncclCommInitRank(&comm, worldSize, id, worldRank) != trncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", worldRank, trncclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  trnrtStreamCreate(&stream);
  int failed = RUN_ALL_TESTS(), anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  trnrtStreamDestroy(stream);
  trncclCommDestroy(comm);
  MPI_Finalize();
  return anyFailed;
}
