// Modes of fault_rank (fault_rank.cc) kept apart to keep that file short: the soak's random
// collectives (K1) and a rank that finalizes right after a send (C3). Included by fault_rank.cc
// inside its anonymous namespace, after the helpers they use (World, setup, init, say, opt,
// reportFailure); not a header for anything else.
// fault_rank.cc includes what they need (<malloc.h>, <poll.h>, random_coll.h) at its top.
#pragma once

// True once the test closed our stdin (without blocking).
bool stdinClosed() {
  static bool closed = false;
  pollfd p{0, POLLIN, 0};
  char buf[64];
  while (!closed && ::poll(&p, 1, 0) == 1) closed = read(0, buf, sizeof(buf)) <= 0;
  return closed;
}

// Random collectives, dtypes, sizes and roots (random_coll.h; every rank draws the same from
// `rng`), each result compared with its reference: WRONG <seq> <call> <element> and exit 5 on
// a difference. A tiny all-reduce after each call tells every rank whether one of them saw its
// stdin closed: they stop together (trnrtSuccess). STATS every `sample` calls. Returns the
// failed wait's error, with the time its call was issued in `issued`.
struct RandomBuffers {
  void* send = nullptr;
  void* recv = nullptr;
  void* flag = nullptr;
};

trnrtError_t randomCalls(World& w, std::mt19937_64& rng, const RandomBuffers& b,
                         long long& issued) {
  using namespace trnccl::fault;
  long sample = opt("sample", 100);
  for (long seq = 0;; ++seq) {
    RandomCall c = drawCall(rng, w.nranks);
    std::vector<std::byte> in = sendBufferOf(c, w.rank, w.nranks, seq);
    trnrtMemcpy(b.send, in.data(), in.size(), trnrtMemcpyHostToDevice);
    int32_t stop = stdinClosed() ? 1 : 0;
    trnrtMemcpy(b.flag, &stop, sizeof(stop), trnrtMemcpyHostToDevice);
    issued = nowMs();
    trncclResult_t r = issueCall(c, b.send, b.recv, w.comm, w.stream);
    if (r == trncclSuccess) {
      r = trncclAllReduce(b.flag, b.flag, 1, trncclInt32, trncclMax, w.comm, w.stream);
    }
    trnrtError_t e = trnrtStreamSynchronize(w.stream);
    if (r != trncclSuccess || e != trnrtSuccess) {
      return e != trnrtSuccess ? e : trnrtErrorInvalidValue;
    }
    bool checked = false;
    std::vector<std::byte> want = expectedOf(c, w.rank, w.nranks, seq, &checked);
    std::vector<std::byte> got(want.size());
    trnrtMemcpy(got.data(), b.recv, got.size(), trnrtMemcpyDeviceToHost);
    if (checked && got != want) {
      size_t at = 0;
      while (at < got.size() && got[at] == want[at]) ++at;
      say("WRONG " + std::to_string(seq) + " " + c.describe() + " byte " + std::to_string(at));
      std::exit(5);
    }
    say("ITER " + std::to_string(seq) + " " + std::to_string(nowMs()));
    if (seq % sample == 0) {
      say("STATS " + std::to_string(seq) + " " + std::to_string(openFds()) + " " +
          std::to_string(threads()) + " " + std::to_string(trnccl::fault::rssKb()));
    }
    trnrtMemcpy(&stop, b.flag, sizeof(stop), trnrtMemcpyDeviceToHost);
    if (stop != 0) return trnrtSuccess;
  }
}

// shrink=1 (K1 with recovery, docs/RELIABILITY.md "What to do after an error"): after a failed
// wait, the failed ranks (trncclCommGetFailedRanks) are shrunk out (TRNCCL_SHRINK_ABORT) and
// the survivors go on with random calls on the new communicator and a new stream:
//   ERROR ... (sayError), then SHRUNK <rank> <nranks> <failed ranks...>, or SHRINKFAIL.
// The old communicator is kept in `old` (aborted at the end).
bool shrinkAfterFailure(World& w, trnrtError_t sync, long long issued, trncclComm_t& old) {
  sayError(w, sync, issued);
  // A rank may fail before the dead one's process is gone (an end of file arrives while it
  // exits): probe until some rank is reported, and retry a shrink whose lists disagreed.
  std::vector<int> failed(static_cast<size_t>(w.nranks), -1);
  int n = 0;
  trncclComm_t sub = nullptr;
  trncclResult_t r = trncclSuccess;
  const long long until = nowMs() + 5000;
  for (bool first = true;; first = false) {
    if (!first) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    r = trncclCommGetFailedRanks(w.comm, failed.data(), &n);
    if (r == trncclSuccess && n > 0) {
      r = trncclCommShrink(w.comm, failed.data(), n, &sub, nullptr, TRNCCL_SHRINK_ABORT);
    }
    if ((r == trncclSuccess && n > 0) || nowMs() >= until) break;
  }
  if (r != trncclSuccess || n == 0) {
    say("SHRINKFAIL " + std::to_string(r) + " " + oneLine(trncclGetLastError(nullptr)));
    return false;
  }
  old = w.comm;
  w.comm = sub;
  trncclCommUserRank(sub, &w.rank);
  trncclCommCount(sub, &w.nranks);
  std::string line = "SHRUNK " + std::to_string(w.rank) + " " + std::to_string(w.nranks);
  for (int i = 0; i < n; ++i) line += " " + std::to_string(failed[static_cast<size_t>(i)]);
  say(line);
  trnrtStreamDestroy(w.stream);  // the failed call left it in error
  if (trnrtStreamCreate(&w.stream) != trnrtSuccess) die("trnrtStreamCreate", 0);
  return true;
}

// The soak's ranks (K1): random calls until the test closes stdin (DONE), or a failure:
// reportFailure (hold, abort), or with shrink=1 one recovery by shrink, then random calls again
// (every survivor draws from the same new seed).
int modeRandom(World& w) {
  setup(w, 1);
  size_t bytes = trnccl::fault::kMaxRandomCount * 8 * static_cast<size_t>(w.nranks);
  RandomBuffers b;
  if (trnrtMalloc(&b.send, bytes) != trnrtSuccess || trnrtMalloc(&b.recv, bytes) != trnrtSuccess ||
      trnrtMalloc(&b.flag, sizeof(int32_t)) != trnrtSuccess) {
    die("trnrtMalloc", 0);
  }
  // Flat RSS must mean no leak, not a warm heap: big host buffers always come from (and go back
  // to) mmap, whatever glibc's dynamic threshold learnt, and the device buffers are touched once.
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  std::vector<std::byte> zeros(bytes);
  trnrtMemcpy(b.send, zeros.data(), bytes, trnrtMemcpyHostToDevice);
  trnrtMemcpy(b.recv, zeros.data(), bytes, trnrtMemcpyHostToDevice);
  init(w);
  trncclComm_t old = nullptr;
  for (uint64_t round = 0;; ++round) {
    std::mt19937_64 rng(static_cast<uint64_t>(opt("seed", 1)) + round * 1000003);
    long long issued = 0;
    trnrtError_t e = randomCalls(w, rng, b, issued);
    if (e == trnrtSuccess) break;
    if (!opt("shrink", 0) || old != nullptr) return reportFailure(w, e, issued);
    if (!shrinkAfterFailure(w, e, issued, old)) return 6;
  }
  trncclCommDestroy(w.comm);
  if (old != nullptr) trncclCommAbort(old);
  say("DONE");
  return 0;
}

// C3: rank 0 sends `count` floats to rank 1, then finalizes, destroys its communicator and
// exits at once; rank 1 posts the receive only `delay_ms` later and checks every element.
int modeFinalize(World& w) {
  setup(w, static_cast<size_t>(opt("count", 1024)));
  init(w);
  long long issued = nowMs();
  if (w.rank == 0) trncclSend(w.send, w.count, trncclFloat32, 1, w.comm, w.stream);
  if (w.rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(opt("delay_ms", 1000)));
    trncclRecv(w.recv, w.count, trncclFloat32, 0, w.comm, w.stream);
  }
  if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
    return reportFailure(w, e, issued);
  }
  if (w.rank == 1) {
    std::vector<float> got(w.count);
    trnrtMemcpy(got.data(), w.recv, w.count * sizeof(float), trnrtMemcpyDeviceToHost);
    for (size_t i = 0; i < w.count; ++i) {
      if (got[i] != 1.0f) {
        say("WRONG element " + std::to_string(i) + " " + std::to_string(got[i]));
        return 5;
      }
    }
  }
  if (trncclResult_t r = trncclCommFinalize(w.comm); r != trncclSuccess) die("finalize", r);
  trncclCommDestroy(w.comm);
  say("DONE");
  return 0;
}

// A rank stuck on a peer: rank `receiver` receives from rank `sender`, which never sends (it
// idles like every other rank until the test's go, then aborts). The receiver says WAITING once
// its receive is enqueued, and ERROR (reportFailure) when the wait fails.
int modeRecvStuck(World& w) {
  setup(w, 1024);
  init(w);
  if (w.rank != opt("receiver", 1)) {
    waitForGo();
    long long t0 = nowMs();
    trncclCommAbort(w.comm);
    say("ABORT_MS " + std::to_string(nowMs() - t0));
    return 0;
  }
  long long issued = nowMs();
  trncclRecv(w.recv, w.count, trncclFloat32, static_cast<int>(opt("sender", 0)), w.comm, w.stream);
  say("WAITING");
  if (trnrtError_t e = trnrtStreamSynchronize(w.stream); e != trnrtSuccess) {
    return reportFailure(w, e, issued);
  }
  say("WRONG the receive completed without a send");
  return 5;
}
