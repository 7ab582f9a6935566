// mpirun suite entry: MPI carries only the unique id and the verdicts; data moves through trnccl.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "mpi_env.h"

namespace trnccl::testing {
int worldRank = 0;
int worldSize = 1;
trncclComm_t worldComm = nullptr;
trnrtStream_t worldStream = nullptr;
}  // namespace trnccl::testing

int main(int argc, char** argv) {
  using namespace trnccl::testing;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  ::testing::InitGoogleTest(&argc, argv);
  if (worldRank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  trncclUniqueId id;
  if (worldRank == 0 && trncclGetUniqueId(&id) != trncclSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (trncclCommInitRank(&worldComm, worldSize, id, worldRank) != trncclSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", worldRank, trncclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  trnrtStreamCreate(&worldStream);
  int failed = RUN_ALL_TESTS(), anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  trnrtStreamDestroy(worldStream);
  trncclCommDestroy(worldComm);
  MPI_Finalize();
  return anyFailed;
}
