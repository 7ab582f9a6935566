// One rank of the multi-host namespace test (netns_test.sh): a real process inside its emulated
// host's network and UTS namespaces, joined through TRNCCL_COMM_ID=<host0 address>:<port> (no
// MPI). For each algorithm setting and count it runs all-reduce, all-gather and reduce-scatter
// (float32 sum) and checks every element against a reference computed here from the same
// formula every rank uses for its input. Inputs are small integers, so sums are exact.
//
// Usage: multihost_rank <rank> <nranks> [algos=default,ring,...] [counts=1,4099,...]
//                       [watchdog=<s>]
// "default" leaves TRNCCL_ALGO unset (the tuner chooses); any other name forces that algorithm
// for all three collectives. A communicator reads TRNCCL_ALGO once, at its creation
// (src/plan/overrides.h), so each setting runs on a communicator split off with a config of
// its own (one without a config would inherit the parent's setting). All-reduce
// uses `count` elements; all-gather sends and reduce-scatter receives ceil(count / nranks) per
// rank, so the three move about the same bytes and odd counts stay odd.
//
// Prints on stdout: "OK <coll> <algo> <count>" per checked call, "DONE" at the end, or
// "WRONG ..." / "FAIL ..." and a nonzero exit code.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "trnccl/trnccl.h"

namespace {

std::map<std::string, std::string> opts;

std::string opt(const std::string& key, const std::string& fallback) {
  auto it = opts.find(key);
  return it == opts.end() ? fallback : it->second;
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what, trncclComm_t comm = nullptr) {
  say("FAIL " + what + ": " + trncclGetLastError(comm));
  std::exit(3);
}

// Rank r's input element i: an integer in [0, 1000), different per rank and position.
float input(int rank, size_t i) {
  return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 131 + 17) % 1000);
}

// Device buffers of one collective, released at scope exit.
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
  Buffers(size_t sendCount, size_t recvCount) {
    if (trnrtMalloc(&send, sendCount * sizeof(float)) != trnrtSuccess ||
        trnrtMalloc(&recv, recvCount * sizeof(float)) != trnrtSuccess) {
      fail("trnrtMalloc");
    }
  }
  ~Buffers() {
    trnrtFree(send);
    trnrtFree(recv);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
};

struct World {
  int rank = 0;
  int nranks = 1;
  trncclComm_t comm = nullptr;
  trnrtStream_t stream = nullptr;
};

void upload(void* dst, int rank, size_t count, size_t firstIndex) {
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = input(rank, firstIndex + i);
  if (trnrtMemcpy(dst, host.data(), count * sizeof(float), trnrtMemcpyHostToDevice) !=
      trnrtSuccess) {
    fail("trnrtMemcpy to device");
  }
}

// Synchronizes, downloads `count` results and compares them with expected(i).
template <typename Expected>
void check(World& w, const char* coll, const std::string& algo, size_t count, void* recv,
           Expected expected) {
  if (trnrtStreamSynchronize(w.stream) != trnrtSuccess) {
    fail(std::string(coll) + " " + algo + " " + std::to_string(count), w.comm);
  }
  std::vector<float> got(count);
  if (trnrtMemcpy(got.data(), recv, count * sizeof(float), trnrtMemcpyDeviceToHost) !=
      trnrtSuccess) {
    fail("trnrtMemcpy to host");
  }
  for (size_t i = 0; i < count; ++i) {
    float want = expected(i);
    if (got[i] != want) {
      say("WRONG " + std::string(coll) + " " + algo + " count " + std::to_string(count) +
          " element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", expected " +
          std::to_string(want));
      std::exit(5);
    }
  }
  say("OK " + std::string(coll) + " " + algo + " " + std::to_string(count));
}

float sumOverRanks(int nranks, size_t i) {
  long long sum = 0;
  for (int r = 0; r < nranks; ++r) sum += static_cast<long long>(input(r, i));
  return static_cast<float>(sum);
}

void allReduce(World& w, const std::string& algo, size_t count) {
  Buffers b(count, count);
  upload(b.send, w.rank, count, 0);
  if (trncclAllReduce(b.send, b.recv, count, trncclFloat32, trncclSum, w.comm, w.stream) !=
      trncclSuccess) {
    fail("trncclAllReduce", w.comm);
  }
  check(w, "allreduce", algo, count, b.recv, [&](size_t i) { return sumOverRanks(w.nranks, i); });
}

void allGather(World& w, const std::string& algo, size_t per) {
  const size_t n = static_cast<size_t>(w.nranks);
  Buffers b(per, per * n);
  upload(b.send, w.rank, per, 0);
  if (trncclAllGather(b.send, b.recv, per, trncclFloat32, w.comm, w.stream) != trncclSuccess) {
    fail("trncclAllGather", w.comm);
  }
  check(w, "allgather", algo, per * n, b.recv,
        [&](size_t i) { return input(static_cast<int>(i / per), i % per); });
}

void reduceScatter(World& w, const std::string& algo, size_t per) {
  const size_t n = static_cast<size_t>(w.nranks);
  Buffers b(per * n, per);
  upload(b.send, w.rank, per * n, 0);
  if (trncclReduceScatter(b.send, b.recv, per, trncclFloat32, trncclSum, w.comm, w.stream) !=
      trncclSuccess) {
    fail("trncclReduceScatter", w.comm);
  }
  const size_t first = static_cast<size_t>(w.rank) * per;
  check(w, "reducescatter", algo, per, b.recv,
        [&](size_t i) { return sumOverRanks(w.nranks, first + i); });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <rank> <nranks> [algos=a,b] [counts=n,m] [watchdog=s]\n",
                 argv[0]);
    return 2;
  }
  for (int i = 3; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    if (eq != nullptr) opts[std::string(argv[i], static_cast<size_t>(eq - argv[i]))] = eq + 1;
  }
  // A rank that hangs ends itself even if the script that started it is gone.
  alarm(static_cast<unsigned>(std::atoi(opt("watchdog", "120").c_str())));
  World w;
  w.rank = std::atoi(argv[1]);
  w.nranks = std::atoi(argv[2]);
  if (trnrtStreamCreate(&w.stream) != trnrtSuccess) fail("trnrtStreamCreate");
  trncclUniqueId id;
  if (trncclGetUniqueId(&id) != trncclSuccess) fail("trncclGetUniqueId");
  if (trncclCommInitRank(&w.comm, w.nranks, id, w.rank) != trncclSuccess) {
    fail("trncclCommInitRank");
  }
  say("READY " + std::to_string(w.rank));
  for (const std::string& algo : splitList(opt("algos", "default,ring"))) {
    if (algo == "default") {
      unsetenv("TRNCCL_ALGO");
    } else {
      std::string spec = "allreduce:" + algo + ";allgather:" + algo + ";reducescatter:" + algo;
      setenv("TRNCCL_ALGO", spec.c_str(), 1);
    }
    World forced = w;
    trncclConfig_t config = TRNCCL_CONFIG_INITIALIZER;
    if (trncclCommSplit(w.comm, 0, w.rank, &forced.comm, &config) != trncclSuccess) {
      fail("trncclCommSplit for " + algo, w.comm);
    }
    for (const std::string& c : splitList(opt("counts", "1,4099,1048579"))) {
      size_t count = std::strtoull(c.c_str(), nullptr, 10);
      size_t per = (count + static_cast<size_t>(w.nranks) - 1) / static_cast<size_t>(w.nranks);
      allReduce(forced, algo, count);
      allGather(forced, algo, per);
      reduceScatter(forced, algo, per);
    }
    if (trncclCommDestroy(forced.comm) != trncclSuccess) fail("trncclCommDestroy " + algo);
  }
  if (trncclCommDestroy(w.comm) != trncclSuccess) fail("trncclCommDestroy");
  trnrtStreamDestroy(w.stream);
  say("DONE");
  return 0;
}
