// One rank of a fault-test job: a real process started by the launcher (launcher.h) with
// TRNCCL_COMM_ID=127.0.0.1:<port>, so no MPI is needed. It prints one line per event on stdout
// for the test to parse (times are CLOCK_MONOTONIC milliseconds, comparable across processes):
//   READY <rank>                         init done
//   ITER <i> <t>                         iteration i finished at t (and checked, with check=1)
//   WRONG <i> <element> <got> <expected> iteration i returned a wrong sum (exit 5)
//   ERROR <t> <code> <async> <since> <message>   a wait failed at t, <since> ms after the
//                                        failing call was issued; <async> = GetAsyncError
//   ABORT_MS <ms>                        how long trncclCommAbort took
//   UNBLOCK_MS <ms>                      abort from another thread -> the blocked wait returned
//   STATS <iter> <fds> <threads> <rssKb> <shm>
//   COUNTS <fdsBefore> <threadsBefore> <fdsAfter> <threadsAfter>
//   AGAIN <rank>                         a new communicator is up after the failure
//   PAUSED <i>                           (pause_at=<i>) waits for the go before iteration i
//   LOOPED                               (end=<file>) all done; waits for <file> before the
//                                        destroy (rank 0 takes the root along when it exits)
//   DONE                                 finished without error
//   WRONG <seq> <call> byte <n>          a result differed from its reference (mode random)
// (mode shrink adds its own lines, see modeShrink)
//
// Usage: fault_rank <mode> <rank> <nranks> [key=value ...]; modes below, and `fault_rank now`,
// which prints the clock for scripts. A watchdog (alarm, key watchdog=<s>, default 60) ends a
// rank that hangs even if the test process died. A held rank waits for its stdin to close, or
// with go=<file> for that file to exist (scripts).
// Keys of every mode's init: id_file=<path> takes the unique id through that file
// (id_file.h) instead of TRNCCL_COMM_ID; hold_init=<r> makes rank r wait for the test's go
// before init (a rank the test kills before it checks in); hold_fail=1 makes a rank whose init
// failed wait for the go before it exits (the test inspects it first).
#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fault/id_file.h"
#include "fault/proc_stats.h"
#include "fault/random_coll.h"
#include "trnccl/trnccl.h"

namespace {

using trnccl::fault::openFds;
using trnccl::fault::threads;

std::map<std::string, std::string> opts;

long opt(const char* key, long fallback) {
  auto it = opts.find(key);
  return it == opts.end() ? fallback : std::atol(it->second.c_str());
}

long long nowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string oneLine(const char* text) {
  std::string s(text);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

[[noreturn]] void die(const char* what, int code) {
  std::fprintf(stderr, "fault_rank: %s failed (%d): %s\n", what, code, trncclGetLastError(nullptr));
  std::exit(3);
}

void waitForFile(const std::string& path) {
  while (access(path.c_str(), F_OK) != 0) usleep(20000);
}

// Blocks until the test closes our stdin (it does once every rank reported what it expects),
// or with go=<file> until that file exists (the watchdog bounds both).
void waitForGo() {
  if (opts.count("go")) return waitForFile(opts["go"]);
  char buf[64];
  while (read(0, buf, sizeof(buf)) > 0) {
  }
}

struct World {
  int rank = 0;
  int nranks = 1;
  trncclComm_t comm = nullptr;
  trnrtStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
};

// With check=1, rank r's element i is i % 97 + r, so every sum is a small exact integer.
float input(int rank, size_t i) { return static_cast<float>(i % 97 + static_cast<size_t>(rank)); }

void setup(World& w, size_t count) {
  w.count = count;
  if (trnrtStreamCreate(&w.stream) != trnrtSuccess) die("trnrtStreamCreate", 0);
  size_t bytes = std::max<size_t>(count, 1) * sizeof(float);
  if (trnrtMalloc(&w.send, bytes) != trnrtSuccess) die("trnrtMalloc", 0);
  if (trnrtMalloc(&w.recv, bytes) != trnrtSuccess) die("trnrtMalloc", 0);
  std::vector<float> data(std::max<size_t>(count, 1), 1.0f);
  if (opt("check", 0)) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = input(w.rank, i);
  }
  trnrtMemcpy(w.send, data.data(), bytes, trnrtMemcpyHostToDevice);
}

// check=1: every element of the last all-reduce is the sum over ranks; exits 5 if not.
void checkSums(World& w, long iter) {
  if (!opt("check", 0)) return;
  std::vector<float> got(w.count);
  trnrtMemcpy(got.data(), w.recv, w.count * sizeof(float), trnrtMemcpyDeviceToHost);
  for (size_t i = 0; i < w.count; ++i) {
    float want = 0;
    for (int r = 0; r < w.nranks; ++r) want += input(r, i);
    if (got[i] != want) {
      say("WRONG " + std::to_string(iter) + " " + std::to_string(i) + " " + std::to_string(got[i]) +
          " " + std::to_string(want));
      std::exit(5);
    }
  }
}

void init(World& w) {
  if (opt("hold_init", -1) == w.rank) waitForGo();
  trncclUniqueId id;
  if (opts.count("id_file")) {
    trncclResult_t r = trnccl::fault::idThroughFile(opts["id_file"], w.rank, &id,
                                                    std::chrono::seconds(opt("watchdog", 60)));
    if (r != trncclSuccess) die("the unique id through id_file", r);
  } else if (trncclResult_t r = trncclGetUniqueId(&id); r != trncclSuccess) {
    die("trncclGetUniqueId", r);
  }
  if (trncclResult_t r = trncclCommInitRank(&w.comm, w.nranks, id, w.rank); r != trncclSuccess) {
    say("INITFAIL " + std::to_string(r) + " " + oneLine(trncclGetLastError(nullptr)));
    if (opt("hold_fail", 0)) waitForGo();
    std::exit(4);
  }
  say("READY " + std::to_string(w.rank));
}

// ERROR <now> <sync error> <async error> <ms since issued> <message>: a failed wait.
void sayError(World& w, trnrtError_t sync, long long issued) {
  long long t = nowMs();
  trncclResult_t async = trncclSuccess;
  trncclCommGetAsyncError(w.comm, &async);
  say("ERROR " + std::to_string(t) + " " + std::to_string(static_cast<int>(sync)) + " " +
      std::to_string(static_cast<int>(async)) + " " + std::to_string(t - issued) + " " +
      oneLine(trncclGetLastError(w.comm)));
}

// Reports a failed wait; then (hold=1) waits for the test's go, and aborts.
int reportFailure(World& w, trnrtError_t sync, long long issued) {
  sayError(w, sync, issued);
  if (opt("hold", 1)) waitForGo();
  long long t0 = nowMs();
  trncclCommAbort(w.comm);
  say("ABORT_MS " + std::to_string(nowMs() - t0));
  return 0;
}

// Destroys the communicator, after the end=<file> barrier if asked for.
int finish(World& w) {
  if (opts.count("end")) {
    say("LOOPED");
    waitForFile(opts["end"]);
  }
  trncclCommDestroy(w.comm);
  say("DONE");
  return 0;
}

// again=<port>: after the failure (and file again_go=<file>), a new communicator, its root on
// <port> of the same host, runs `again_iters` checked all-reduces.
int runAgain(World& w) {
  std::string commId = std::getenv("TRNCCL_COMM_ID") ? std::getenv("TRNCCL_COMM_ID") : "";
  std::string port = opts["again"];
  setenv("TRNCCL_COMM_ID", (commId.substr(0, commId.rfind(':') + 1) + port).c_str(), 1);
  if (opts.count("again_go")) waitForFile(opts["again_go"]);
  // The failed collective left the stream in error (later work on it is skipped): a new one.
  trnrtStreamDestroy(w.stream);
  if (trnrtStreamCreate(&w.stream) != trnrtSuccess) die("trnrtStreamCreate", 0);
  trncclUniqueId id;
  if (trncclResult_t r = trncclGetUniqueId(&id); r != trncclSuccess) die("trncclGetUniqueId", r);
  if (trncclResult_t r = trncclCommInitRank(&w.comm, w.nranks, id, w.rank); r != trncclSuccess) {
    say("INITFAIL " + std::to_string(r) + " " + oneLine(trncclGetLastError(nullptr)));
    return 4;
  }
  say("AGAIN " + std::to_string(w.rank));
  for (long i = 0; i < opt("again_iters", 3); ++i) {
    trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, w.stream);
    if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
      return reportFailure(w, e, nowMs());
    }
    checkSums(w, i);
  }
  return finish(w);
}

// Collectives in a loop, `per_sync` enqueued per synchronize (an error on the first makes the
// stream skip the second: destroy must still not wait for it).
int modeLoop(World& w) {
  setup(w, static_cast<size_t>(opt("count", 1 << 20)));
  init(w);
  long iters = opt("iters", 1000000);
  long perSync = opt("per_sync", 2);
  for (long i = 0; i < iters; ++i) {
    if (i == opt("pause_at", -1)) {
      say("PAUSED " + std::to_string(i));
      waitForGo();
    }
    long long issued = nowMs();
    for (long k = 0; k < perSync; ++k) {
      trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, w.stream);
    }
    if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
      int rc = reportFailure(w, e, issued);
      return opts.count("again") ? runAgain(w) : rc;
    }
    checkSums(w, i);
    say("ITER " + std::to_string(i) + " " + std::to_string(nowMs()));
  }
  return finish(w);
}

// Rank `bad` passes a different count (or datatype: field=type; root: field=root; call order:
// field=order; or skips the call: field=skip).
int modeMismatch(World& w) {
  setup(w, 4096);
  init(w);
  bool bad = w.rank == opt("bad", 1);
  std::string field = opts.count("field") ? opts["field"] : "count";
  long long issued = nowMs();
  size_t count = w.count - ((bad && field == "count") ? 1 : 0);
  if (bad && field == "skip") {  // C3: this rank skips the call, alive, until the test's go
    waitForGo();
    trncclCommAbort(w.comm);
    return 0;
  }
  if (field == "root") {
    trncclBroadcast(w.send, w.recv, count, trncclFloat32, bad ? 1 : 0, w.comm, w.stream);
  } else if (field == "order") {  // C2: rank `bad` broadcasts first, the others all-reduce first
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) != bad) {
        trncclAllReduce(w.send, w.recv, count, trncclFloat32, trncclSum, w.comm, w.stream);
      } else {
        trncclBroadcast(w.send, w.recv, count, trncclFloat32, 0, w.comm, w.stream);
      }
    }
  } else {
    trncclDataType_t type = (bad && field == "type") ? trncclInt32 : trncclFloat32;
    trncclAllReduce(w.send, w.recv, count, type, trncclSum, w.comm, w.stream);
  }
  if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
    return reportFailure(w, e, issued);
  }
  say("DONE");
  trncclCommDestroy(w.comm);
  return 0;
}

// Tiny all-reduces; samples descriptors, threads, RSS and /dev/shm at `sample` and at the end.
int modeSoak(World& w) {
  setup(w, 2);
  init(w);
  long iters = opt("iters", 10000);
  long sample = opt("sample", 1000);
  std::string prefix = opts.count("shm_prefix") ? opts["shm_prefix"] : "trnccl";
  for (long i = 1; i <= iters; ++i) {
    trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, w.stream);
    if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
      return reportFailure(w, e, nowMs());
    }
    // The last sample is taken one call before the end: no peer can finish the last call (and
    // say goodbye, which closes its bootstrap connection at the root) before this rank joins it.
    if (i == sample || i == iters - 1) {
      say("STATS " + std::to_string(i) + " " + std::to_string(openFds()) + " " +
          std::to_string(threads()) + " " + std::to_string(trnccl::fault::rssKb()) + " " +
          std::to_string(trnccl::fault::shmEntries(prefix)));
    }
  }
  trncclCommDestroy(w.comm);
  say("DONE");
  return 0;
}

// Init, one small all-reduce, destroy: for tests that attack init.
int modeInit(World& w) {
  setup(w, 1024);
  init(w);
  trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, w.stream);
  if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
    return reportFailure(w, e, nowMs());
  }
  float got = 0;
  trnrtMemcpy(&got, w.recv, sizeof(got), trnrtMemcpyDeviceToHost);
  if (got != static_cast<float>(w.nranks)) {
    say("WRONG " + std::to_string(got));
    return 5;
  }
  trncclCommDestroy(w.comm);
  say("DONE");
  return 0;
}

// Says COUNTS: descriptors and threads before (given) and now, once they are back to those
// counts or after 3 s. Background threads wind down asynchronously (the root, when this rank
// hosts it).
void sayCounts(int fdsBefore, int threadsBefore) {
  int fdsAfter = openFds(), threadsAfter = threads();
  for (int i = 0; i < 60 && (fdsAfter != fdsBefore || threadsAfter != threadsBefore); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fdsAfter = openFds();
    threadsAfter = threads();
  }
  say("COUNTS " + std::to_string(fdsBefore) + " " + std::to_string(threadsBefore) + " " +
      std::to_string(fdsAfter) + " " + std::to_string(threadsAfter));
}

// Rank `blocked` issues an all-reduce its peers never join; another thread aborts the comm.
// The others init and wait for the test's go. Descriptors and threads are counted before
// init and after the abort.
int modeBlock(World& w) {
  setup(w, 1024);
  if (w.rank != opt("blocked", 1)) {
    init(w);
    waitForGo();
    trncclCommAbort(w.comm);
    say("DONE");
    return 0;
  }
  int fdsBefore = openFds(), threadsBefore = threads();
  init(w);
  trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, w.stream);
  long long abortAt = 0, abortMs = 0;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(opt("abort_after_ms", 500)));
    abortAt = nowMs();
    trncclCommAbort(w.comm);
    abortMs = nowMs() - abortAt;
  });
  trnrtError_t e = trnrtStreamSynchronize(w.stream);
  long long unblocked = nowMs();
  aborter.join();
  say("SYNC " + std::to_string(static_cast<int>(e)));
  say("UNBLOCK_MS " + std::to_string(unblocked - abortAt));
  say("ABORT_MS " + std::to_string(abortMs));
  sayCounts(fdsBefore, threadsBefore);
  return 0;
}

#include "fault/rank_modes.h"   // more modes, over the helpers above
#include "fault/shrink_mode.h"  // mode shrink, over the helpers above

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "now") == 0) {
    std::printf("%lld\n", nowMs());
    return 0;
  }
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s <loop|mismatch|soak|init|block|shrink|random|finalize> <rank> <nranks> "
                 "[k=v ...]\n",
                 argv[0]);
    return 2;
  }
  for (int i = 4; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    if (eq != nullptr) opts[std::string(argv[i], static_cast<size_t>(eq - argv[i]))] = eq + 1;
  }
  alarm(static_cast<unsigned>(opt("watchdog", 60)));
  World w;
  w.rank = std::atoi(argv[2]);
  w.nranks = std::atoi(argv[3]);
  std::string mode = argv[1];
  if (mode == "loop") return modeLoop(w);
  if (mode == "mismatch") return modeMismatch(w);
  if (mode == "soak") return modeSoak(w);
  if (mode == "init") return modeInit(w);
  if (mode == "block") return modeBlock(w);
  if (mode == "shrink") return modeShrink(w);
  if (mode == "random") return modeRandom(w);
  if (mode == "finalize") return modeFinalize(w);
  if (mode == "recv_stuck") return modeRecvStuck(w);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
