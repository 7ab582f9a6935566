#include "common/local_ranks.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace trnccl::perf {

void check(trncclResult_t result, std::string_view what, trncclComm_t comm) {
  if (result == trncclSuccess) return;
  const char* last = trncclGetLastError(comm);
  throw Failure(fmt::format("{} failed: {} ({}){}{}", what, trncclGetErrorString(result),
                            int(result), last && *last ? ": " : "", last ? last : ""));
}

void check(trnrtError_t error, std::string_view what) {
  if (error == trnrtSuccess) return;
  const char* last = trnrtGetLastErrorMessage();
  throw Failure(fmt::format("{} failed: {} ({}){}{}", what, trnrtGetErrorString(error), int(error),
                            last && *last ? ": " : "", last ? last : ""));
}

LocalRanks::LocalRanks(const RankSlice& slice, size_t bufferBytes, double timeoutSec,
                       const trncclUniqueId* id, bool localRegister)
    : nranks_(slice.nranks), bufferBytes_(bufferBytes), timeoutSec_(timeoutSec) {
  int available = 0;
  check(trnrtGetDeviceCount(&available), "trnrtGetDeviceCount");
  for (int i = 0; i < slice.count; ++i) {
    LocalRank r;
    r.rank = slice.firstRank + i;
    r.device = slice.firstDevice + i;
    if (r.device >= available) {
      throw Failure(
          fmt::format("invalid number of devices: device {} requested but only {} "
                      "exist (TRNRT_NUM_DEVICES); check -t, -g and processes per host",
                      r.device, available));
    }
    ranks_.push_back(r);
  }
  createComms(id);
  for (LocalRank& r : ranks_) {
    check(trnrtSetDevice(r.device), "trnrtSetDevice");
    check(trnrtStreamCreate(&r.stream), "trnrtStreamCreate");
    auto alloc = [&] {
      void* p = nullptr;
      if (localRegister) {
        check(trncclMemAlloc(&p, bufferBytes_), "trncclMemAlloc");
      } else {
        check(trnrtMalloc(&p, bufferBytes_), fmt::format("trnrtMalloc({} bytes)", bufferBytes_));
      }
      return static_cast<char*>(p);
    };
    r.send = alloc();
    r.recv = alloc();
    check(trnrtMemset(r.send, 0, bufferBytes_), "trnrtMemset");
    check(trnrtMemset(r.recv, 0, bufferBytes_), "trnrtMemset");
    if (localRegister) {
      check(trncclCommRegister(r.comm, r.send, bufferBytes_, &r.sendHandle), "trncclCommRegister",
            r.comm);
      check(trncclCommRegister(r.comm, r.recv, bufferBytes_, &r.recvHandle), "trncclCommRegister",
            r.comm);
    }
  }
}

void LocalRanks::createComms(const trncclUniqueId* id) {
  if (id == nullptr) {
    std::vector<int> devices;
    for (const LocalRank& r : ranks_) devices.push_back(r.device);
    std::vector<trncclComm_t> comms(ranks_.size(), nullptr);
    check(trncclCommInitAll(comms.data(), int(comms.size()), devices.data()), "trncclCommInitAll");
    for (size_t i = 0; i < ranks_.size(); ++i) ranks_[i].comm = comms[i];
    return;
  }
  // trncclCommInitRank blocks until all ranks joined: one thread per local rank.
  std::vector<std::string> errors(ranks_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    threads.emplace_back([&, i] {
      LocalRank& r = ranks_[i];
      try {
        check(trnrtSetDevice(r.device), "trnrtSetDevice");
        check(trncclCommInitRank(&r.comm, nranks_, *id, r.rank),
              fmt::format("trncclCommInitRank(rank {})", r.rank));
      } catch (const Failure& f) {
        errors[i] = f.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) throw Failure(e);
  }
}

LocalRanks::~LocalRanks() {
  // Destroy in parallel: whether or not destruction waits for peers, no rank waits on another
  // rank of this process that has not started yet.
  std::vector<std::thread> threads;
  for (LocalRank& r : ranks_) {
    for (void* h : {r.sendHandle, r.recvHandle}) {
      if (r.comm && h) trncclCommDeregister(r.comm, h);
    }
    if (r.comm) threads.emplace_back([c = r.comm] { trncclCommDestroy(c); });
  }
  for (std::thread& t : threads) t.join();
  for (LocalRank& r : ranks_) {
    trnrtSetDevice(r.device);
    if (r.stream) trnrtStreamDestroy(r.stream);
    if (r.send) trnrtFree(r.send);
    if (r.recv) trnrtFree(r.recv);
  }
}

void LocalRanks::abortAll() {
  for (LocalRank& r : ranks_) {
    if (r.comm) trncclCommAbort(r.comm);
    r.comm = nullptr;
  }
}

void LocalRanks::waitAll() {
  if (timeoutSec_ > 0) return waitPolling();
  // Timed in the blocking modes (-z 1/2 wait after every call): the message is formatted only on
  // failure, and the communicator's asynchronous error is not read after a synchronize that
  // succeeded (nccl-tests reads it only while the stream is busy; here it costs a look at the
  // bootstrap root's socket, a syscall). An error that fails a later call fails its synchronize.
  for (LocalRank& r : ranks_) {
    const trnrtError_t synced = trnrtStreamSynchronize(r.stream);
    if (synced == trnrtSuccess) continue;
    trncclResult_t async = trncclSuccess;
    check(trncclCommGetAsyncError(r.comm, &async), "trncclCommGetAsyncError", r.comm);
    if (async != trncclSuccess) {
      check(async, fmt::format("rank {} asynchronous error", r.rank), r.comm);
    }
    check(synced, fmt::format("trnrtStreamSynchronize(rank {})", r.rank));
  }
}

// As nccl-tests' testStreamSynchronize: poll the streams and the communicators' async errors,
// abort everything once the timeout passes.
void LocalRanks::waitPolling() {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeoutSec_);
  for (LocalRank& r : ranks_) {
    for (int spins = 0;; ++spins) {
      const trnrtError_t q = trnrtStreamQuery(r.stream);
      if (q == trnrtSuccess) break;
      if (q != trnrtErrorNotReady) check(q, fmt::format("trnrtStreamQuery(rank {})", r.rank));
      trncclResult_t async = trncclSuccess;
      check(trncclCommGetAsyncError(r.comm, &async), "trncclCommGetAsyncError", r.comm);
      check(async, fmt::format("rank {} asynchronous error", r.rank), r.comm);
      if (Clock::now() > deadline) {
        abortAll();
        throw Failure(
            fmt::format("timeout: rank {} did not finish within {} s (-T); "
                        "communicators aborted",
                        r.rank, timeoutSec_));
      }
      if (spins < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
}

}  // namespace trnccl::perf
