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
// (mode shrink adds its own lines, see modeShrink)
//
// Usage: fault_rank <mode> <rank> <nranks> [key=value ...]; modes below, and `fault_rank now`,
// which prints the clock for scripts. A watchdog (alarm, key watchdog=<s>, default 60) ends a
// rank that hangs even if the test process died. A held rank waits for its stdin to close, or
// with go=<file> for that file to exist (scripts).
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

#include "fault/proc_stats.h"
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
  trncclUniqueId id;
  if (trncclResult_t r = trncclGetUniqueId(&id); r != trncclSuccess) die("trncclGetUniqueId", r);
  if (trncclResult_t r = trncclCommInitRank(&w.comm, w.nranks, id, w.rank); r != trncclSuccess) {
    say("INITFAIL " + std::to_string(r) + " " + oneLine(trncclGetLastError(nullptr)));
    std::exit(4);
  }
  say("READY " + std::to_string(w.rank));
}

// Reports a failed wait; then (hold=1) waits for the test's go, and aborts.
int reportFailure(World& w, trnrtError_t sync, long long issued) {
  long long t = nowMs();
  trncclResult_t async = trncclSuccess;
  trncclCommGetAsyncError(w.comm, &async);
  say("ERROR " + std::to_string(t) + " " + std::to_string(static_cast<int>(sync)) + " " +
      std::to_string(static_cast<int>(async)) + " " + std::to_string(t - issued) + " " +
      oneLine(trncclGetLastError(w.comm)));
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

// Rank `bad` passes a different count (or datatype: field=type, or root: coll=broadcast).
int modeMismatch(World& w) {
  setup(w, 4096);
  init(w);
  bool bad = w.rank == opt("bad", 1);
  std::string field = opts.count("field") ? opts["field"] : "count";
  long long issued = nowMs();
  size_t count = w.count - ((bad && field == "count") ? 1 : 0);
  if (field == "root") {
    trncclBroadcast(w.send, w.recv, count, trncclFloat32, bad ? 1 : 0, w.comm, w.stream);
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

// The shm segments this process maps (their names end in " (deleted)": unlinked after setup).
std::vector<std::string> mappedSegments() {
  std::vector<std::string> names;
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return names;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    const char* at = std::strstr(line, "/dev/shm/trnccl-");
    if (at == nullptr) continue;
    std::string name(at + std::strlen("/dev/shm/"));
    name = name.substr(0, name.find_first_of(" \n"));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::fclose(f);
  return names;
}

// Issue 18, F7: all-reduces until a peer dies, then recovers as docs/RELIABILITY.md says: the
// failed ranks (trncclCommGetFailedRanks), trncclCommShrink(TRNCCL_SHRINK_ABORT), `iters2`
// all-reduces of (parent rank + 1) on the new communicator, then the old one once more.
//   FAILED <ranks...>      SHRUNK <rank> <nranks> <ms>     MAPPED <segment>
//   SUM <i> <value>        OLDCOMM <call result> <async>   COUNTS as in mode block
int modeShrink(World& w) {
  setup(w, static_cast<size_t>(opt("count", 1 << 18)));
  int fdsBefore = openFds(), threadsBefore = threads();
  init(w);
  long long issued = 0;
  for (long i = 0;; ++i) {
    issued = nowMs();
    trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, w.stream);
    if (trnrtStreamSynchronize(w.stream) != trnrtSuccess) break;
    say("ITER " + std::to_string(i) + " " + std::to_string(nowMs()));
  }
  trncclResult_t async = trncclSuccess;
  trncclCommGetAsyncError(w.comm, &async);
  say("ERROR " + std::to_string(nowMs()) + " 1 " + std::to_string(async) + " " +
      std::to_string(nowMs() - issued) + " " + oneLine(trncclGetLastError(w.comm)));
  int n = 0;
  if (trncclResult_t r = trncclCommGetFailedRanks(w.comm, nullptr, &n); r != trncclSuccess) {
    die("trncclCommGetFailedRanks", r);
  }
  std::vector<int> failed(static_cast<size_t>(w.nranks), -1);
  trncclCommGetFailedRanks(w.comm, failed.data(), &n);
  failed.resize(static_cast<size_t>(n));
  std::string list = "FAILED";
  for (int r : failed) list += " " + std::to_string(r);
  say(list);
  trncclComm_t sub = nullptr;
  long long t0 = nowMs();
  if (trncclResult_t r =
          trncclCommShrink(w.comm, failed.data(), n, &sub, nullptr, TRNCCL_SHRINK_ABORT);
      r != trncclSuccess) {
    say("SHRINKFAIL " + std::to_string(r) + " " + oneLine(trncclGetLastError(nullptr)));
    return 6;
  }
  int subRank = -1, subCount = 0;
  trncclCommUserRank(sub, &subRank);
  trncclCommCount(sub, &subCount);
  say("SHRUNK " + std::to_string(subRank) + " " + std::to_string(subCount) + " " +
      std::to_string(nowMs() - t0));
  for (const std::string& name : mappedSegments()) say("MAPPED " + name);
  trnrtStream_t stream = nullptr;  // the old stream keeps its error
  if (trnrtStreamCreate(&stream) != trnrtSuccess) die("trnrtStreamCreate", 0);
  std::vector<float> mine(w.count, static_cast<float>(w.rank + 1)), got(w.count);
  for (long i = 0; i < opt("iters2", 20); ++i) {
    trnrtMemcpy(w.send, mine.data(), w.count * sizeof(float), trnrtMemcpyHostToDevice);
    trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, sub, stream);
    if (trnrtError_t e = trnrtStreamSynchronize(stream); e != trnrtSuccess) {
      say("SUBFAIL " + oneLine(trncclGetLastError(sub)));
      return 7;
    }
    trnrtMemcpy(got.data(), w.recv, w.count * sizeof(float), trnrtMemcpyDeviceToHost);
    bool same = std::all_of(got.begin(), got.end(), [&](float v) { return v == got[0]; });
    say("SUM " + std::to_string(i) + " " + (same ? std::to_string(got[0]) : "uneven"));
  }
  for (int k = 0; k < 3; ++k) {
    trncclResult_t r =
        trncclAllReduce(w.send, w.recv, w.count, trncclFloat32, trncclSum, w.comm, stream);
    trncclCommGetAsyncError(w.comm, &async);
    say("OLDCOMM " + std::to_string(r) + " " + std::to_string(async));
  }
  trncclCommDestroy(sub);
  trncclCommAbort(w.comm);
  trnrtStreamDestroy(stream);
  sayCounts(fdsBefore, threadsBefore);
  say("MAPPED_AFTER " + std::to_string(mappedSegments().size()));
  say("DONE");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "now") == 0) {
    std::printf("%lld\n", nowMs());
    return 0;
  }
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s <loop|mismatch|soak|init|block|shrink> <rank> <nranks> [k=v ...]\n",
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
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
