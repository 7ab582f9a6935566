// fault_rank's mode shrink (F7): included by fault_rank.cc inside its anonymous namespace,
// over its helpers (World, init, say, opt, sayCounts), as rank_modes.h is.
#pragma once

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
