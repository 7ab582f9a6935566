// The processes of a run: one process stand-alone, or all of MPI_COMM_WORLD under mpirun.
// MPI is used only when built with it (TRNCCL_PERF_MPI) and launched by Open MPI
// (OMPI_COMM_WORLD_SIZE is set), so a stand-alone run never needs an MPI runtime. Only the
// main thread may call its members (MPI_THREAD_FUNNELED); the -t threads meet in ThreadTeam.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trnccl::perf {

enum class TimeAverage { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

class World {
 public:
  World(int* argc, char*** argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  bool usesMpi() const { return mpi_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int localRank() const { return localRank_; }

  void barrier();
  void broadcast(void* data, size_t bytes, int root);
  double reduceTime(double seconds, TimeAverage how);
  int64_t sum(int64_t value);
  int64_t max(int64_t value);
  // Every process's text, in rank order, on process 0 (others get an empty vector).
  std::vector<std::string> gather(const std::string& text);
  // Ends every process of the run (MPI_Abort), or just this one.
  [[noreturn]] void abort(int code);

 private:
  bool mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  int localRank_ = 0;
};

}  // namespace trnccl::perf
