// mpi_bench: OpenMPI's (or any MPI's) all-reduce, all-gather and reduce-scatter on float sum,
// measured as all_reduce_perf, all_gather_perf and reduce_scatter_perf measure trnccl's.
//   mpirun -np 4 mpi_bench all_reduce -b 8 -e 64M -f 4
// The MPI transport is the launcher's business (--mca btl self,vader or tcp,self).
#include <mpi.h>

#include <string>

#include "peers/peer_driver.h"

namespace trnccl::perf::peers {
namespace {

class MpiGroup : public PeerGroup {
 public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  double sum(double value) override {
    double total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
  }

 private:
  int rank_ = [] {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }();
  int size_ = [] {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }();
};

// MPI counts are int: every call here stays far below 2^31 elements per rank.
int mpiCount(size_t count) { return int(count); }

PeerCall allReduce(PeerGroup&, float* send, float* recv, const Counts& c) {
  return [=] { MPI_Allreduce(send, recv, mpiCount(c.param), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
}

PeerCall allGather(PeerGroup&, float* send, float* recv, const Counts& c) {
  return [=] {
    MPI_Allgather(send, mpiCount(c.param), MPI_FLOAT, recv, mpiCount(c.param), MPI_FLOAT,
                  MPI_COMM_WORLD);
  };
}

PeerCall reduceScatter(PeerGroup&, float* send, float* recv, const Counts& c) {
  return [=] {
    MPI_Reduce_scatter_block(send, recv, mpiCount(c.param), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
}

// In place, as torch.distributed calls them: MPI_IN_PLACE with the input where MPI reads it.
PeerCall allReduceInPlace(PeerGroup&, float*, float* recv, const Counts& c) {
  return [=] {
    MPI_Allreduce(MPI_IN_PLACE, recv, mpiCount(c.param), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  };
}

// This rank's block already sits at its offset of the output (NCCL's in-place layout too).
PeerCall allGatherInPlace(PeerGroup&, float*, float* recv, const Counts& c) {
  return [=] {
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, mpiCount(c.param), MPI_FLOAT,
                  MPI_COMM_WORLD);
  };
}

// The whole input in the receive buffer, this rank's block of the result at its start.
PeerCall reduceScatterInPlace(PeerGroup&, float*, float* recv, const Counts& c) {
  return [=] {
    MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, mpiCount(c.param), MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD);
  };
}

constexpr PeerCollective kCollectives[] = {
    {"all_reduce", "MPI_Allreduce", &kAllReduceTest, Placement::kOutOfPlace, allReduce},
    {"all_gather", "MPI_Allgather", &kAllGatherTest, Placement::kOutOfPlace, allGather},
    {"reduce_scatter", "MPI_Reduce_scatter_block", &kReduceScatterTest, Placement::kOutOfPlace,
     reduceScatter},
    {"all_reduce_in_place", "MPI_Allreduce(MPI_IN_PLACE)", &kAllReduceTest, Placement::kInPlace,
     allReduceInPlace},
    {"all_gather_in_place", "MPI_Allgather(MPI_IN_PLACE)", &kAllGatherTest, Placement::kInPlace,
     allGatherInPlace},
    {"reduce_scatter_in_place", "MPI_Reduce_scatter_block(MPI_IN_PLACE)", &kReduceScatterTest,
     Placement::kSameBuffer, reduceScatterInPlace},
};

}  // namespace
}  // namespace trnccl::perf::peers

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    trnccl::perf::peers::MpiGroup group;
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string library = version;
    library = library.substr(0, library.find_first_of(",\n"));  // "Open MPI v4.1.4"
    rc = trnccl::perf::peers::runPeerBench(argc, argv, library, group,
                                           trnccl::perf::peers::kCollectives);
  }
  MPI_Finalize();
  return rc;
}
