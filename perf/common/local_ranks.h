// The ranks one thread drives (-g): one communicator, stream and pair of device buffers per
// device, all issued from that thread (trnccl calls only enqueue on the stream). With -t every
// thread of a process owns its own LocalRanks.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "trnccl/trnccl.h"

namespace trnccl::perf {

// A failed trnccl/trnrt call, a timeout or a broken run: reported once, then the run ends.
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws Failure naming `what`, the result and the library's last error message.
void check(trncclResult_t result, std::string_view what, trncclComm_t comm = nullptr);
void check(trnrtError_t error, std::string_view what);

struct LocalRank {
  int rank = 0;    // global rank
  int device = 0;  // emulated NeuronCore index
  trncclComm_t comm = nullptr;
  trnrtStream_t stream = nullptr;
  char* send = nullptr;  // device buffers of bufferBytes each
  char* recv = nullptr;
  void* sendHandle = nullptr;  // trncclCommRegister's handles with -R 1
  void* recvHandle = nullptr;
};

// Ranks firstRank .. firstRank + count - 1 of nranks, on devices firstDevice + i.
struct RankSlice {
  int firstRank = 0;
  int firstDevice = 0;
  int count = 1;
  int nranks = 1;
};

class LocalRanks {
 public:
  // With id, every rank joins with trncclCommInitRank; without, the slice must be the whole run
  // and one trncclCommInitAll creates it.
  // localRegister (-R 1): the buffers come from trncclMemAlloc and are registered with the
  // rank's communicator for the whole run.
  LocalRanks(const RankSlice& slice, size_t bufferBytes, double timeoutSec,
             const trncclUniqueId* id, bool localRegister = false);
  ~LocalRanks();
  LocalRanks(const LocalRanks&) = delete;
  LocalRanks& operator=(const LocalRanks&) = delete;

  std::vector<LocalRank>& ranks() { return ranks_; }
  int nranks() const { return nranks_; }
  size_t bufferBytes() const { return bufferBytes_; }

  // Waits until every local stream is idle. Throws Failure on a stream or communicator error,
  // or when the timeout passes (the communicators are aborted first).
  void waitAll();
  // trncclCommAbort on every communicator still alive; the destructor then skips them.
  void abortAll();

 private:
  void createComms(const trncclUniqueId* id);
  void waitPolling();

  std::vector<LocalRank> ranks_;
  int nranks_ = 0;
  size_t bufferBytes_ = 0;
  double timeoutSec_ = 0;
};

}  // namespace trnccl::perf
