#include "common/world.h"

#include <cstdlib>

#ifdef TRNCCL_PERF_MPI
#include <mpi.h>
#endif

namespace trnccl::perf {

World::World([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
#ifdef TRNCCL_PERF_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) return;
  // -t threads: only the main thread calls MPI (the driver's thread 0), which FUNNELED allows.
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) {
    localRank_ = std::atoi(local);
  } else {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &localRank_);
    MPI_Comm_free(&node);
  }
#endif
}

World::~World() {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) MPI_Finalize();
#endif
}

void World::barrier() {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void World::broadcast([[maybe_unused]] void* data, [[maybe_unused]] size_t bytes,
                      [[maybe_unused]] int root) {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) MPI_Bcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
#endif
}

double World::reduceTime(double seconds, [[maybe_unused]] TimeAverage how) {
#ifdef TRNCCL_PERF_MPI
  if (!mpi_) return seconds;
  double out = seconds;
  switch (how) {
    case TimeAverage::kRank0:
      MPI_Bcast(&out, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      break;
    case TimeAverage::kMean:
      MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      out /= size_;
      break;
    case TimeAverage::kMin:
      MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      break;
    case TimeAverage::kMax:
      MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      break;
  }
  return out;
#else
  return seconds;
#endif
}

int64_t World::sum(int64_t value) {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) {
    int64_t out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
#endif
  return value;
}

int64_t World::max(int64_t value) {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) {
    int64_t out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
#endif
  return value;
}

std::vector<std::string> World::gather(const std::string& text) {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) {
    int len = int(text.size());
    std::vector<int> lens(size_t(size_), 0);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> displs(size_t(size_), 0);
    int total = 0;
    for (int p = 0; p < size_; ++p) {
      displs[size_t(p)] = total;
      total += lens[size_t(p)];
    }
    std::string all(size_t(rank_ == 0 ? total : 0), '\0');
    MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
                MPI_COMM_WORLD);
    std::vector<std::string> out;
    if (rank_ == 0) {
      for (int p = 0; p < size_; ++p) {
        out.push_back(all.substr(size_t(displs[size_t(p)]), size_t(lens[size_t(p)])));
      }
    }
    return out;
  }
#endif
  return {text};
}

void World::abort(int code) {
#ifdef TRNCCL_PERF_MPI
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

}  // namespace trnccl::perf
