// One rank per MPI process: rank 0 makes the id, MPI_Bcast carries it, then trnccl does the rest.
//   mpirun -np 4 --oversubscribe build/examples/example_allreduce_mpi
#include <mpi.h>
#include <trnccl/trnccl.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  trncclUniqueId id;
  if (rank == 0) trncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);

  trncclComm_t comm;
  if (trncclCommInitRank(&comm, nranks, id, rank) != trncclSuccess) {
    std::fprintf(stderr, "init failed: %s\n", trncclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<double> v(1000, rank);
  trncclAllReduce(v.data(), v.data(), v.size(), trncclFloat64, trncclAvg, comm, nullptr);
  trnrtDeviceSynchronize();
  double expected = (nranks - 1) / 2.0;
  int ok = v[0] == expected && v[999] == expected;
  std::printf("rank %d: avg %g (%s)\n", rank, v[0], ok ? "ok" : "WRONG");
  trncclCommDestroy(comm);
  MPI_Finalize();
  return ok ? 0 : 1;
}
