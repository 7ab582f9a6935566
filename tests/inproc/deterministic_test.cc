// Deterministic mode (TRNCCL_DETERMINISTIC=1, trncclConfig_t::deterministic): all-reduce,
// reduce-scatter and reduce of float32 and bf16 inputs whose sum depends on the association
// (2^24 beside small values, 256 in bf16) give exactly the bits of a host fold in rank order,
// under every TRNCCL_ALGO (the ones that decline fall back; every one that claims the order
// runs), 1 and 2 channels, over shm, tcp and both mixed, on two topology descriptions and three
// slice sizes. With the mode off the ring gives other bits for the same inputs: the inputs do
// exercise the order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/registry.h"
#include "api/handle.h"
#include "plan/planner.h"
#include "plan/topology_view.h"
#include "support/ranks.h"
#include "support/tuning.h"

namespace trnccl::testing {
namespace {

// Environment set while communicators are created (and restored after).
struct EnvVar {
  const char* name;
  const char* value;
};

// n ranks as threads, each with a communicator made by trncclCommInitRankConfig.
class Comms {
 public:
  Comms(int n, trncclConfig_t config, const std::vector<EnvVar>& env) : comms_(n), streams_(n) {
    for (const EnvVar& e : env) setenv(e.name, e.value, 1);
    trncclUniqueId id;
    EXPECT_EQ(trncclGetUniqueId(&id), trncclSuccess);
    run([&](int r) {
      EXPECT_EQ(trncclCommInitRankConfig(&comms_[r], n, id, r, &config), trncclSuccess)
          << trncclGetLastError(nullptr);
      EXPECT_EQ(trnrtStreamCreate(&streams_[r]), trnrtSuccess);
    });
    for (const EnvVar& e : env) unsetenv(e.name);
  }
  ~Comms() {
    run([&](int r) {
      trnrtStreamDestroy(streams_[r]);
      trncclCommDestroy(comms_[r]);
    });
  }
  int size() const { return static_cast<int>(comms_.size()); }
  trncclComm_t comm(int r) const { return comms_[r]; }
  trnrtStream_t stream(int r) const { return streams_[r]; }
  void run(const std::function<void(int)>& fn) const { runPerRank(size(), fn); }

 private:
  std::vector<trncclComm_t> comms_;
  std::vector<trnrtStream_t> streams_;
};

trncclConfig_t config(const char* transports, const char* topology, int deterministic) {
  trncclConfig_t c = TRNCCL_CONFIG_INITIALIZER;
  c.transports = transports;
  c.topology = topology;
  c.deterministic = deterministic;
  return c;
}

// Round to nearest even, written here rather than taken from the library.
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Element i of rank r: a huge value, its negation and small ones, placed so that every
// association but the rank-order one loses or keeps different small terms.
float inputValue(trncclDataType_t type, int r, size_t i) {
  const float big = (type == trncclFloat32 ? 16777216.0f : 256.0f) * static_cast<float>(1 + i % 3);
  const float small = 1.0f + 0.25f * static_cast<float>(i % 7);
  switch ((static_cast<size_t>(r) + i) % 4) {
    case 0:
      return big;
    case 2:
      return -big;
    default:
      return small;
  }
}

std::vector<unsigned char> inputs(trncclDataType_t type, int r, size_t count) {
  std::vector<unsigned char> out(count * (type == trncclFloat32 ? 4 : 2));
  for (size_t i = 0; i < count; ++i) {
    const float v = inputValue(type, r, i);
    if (type == trncclFloat32) {
      std::memcpy(out.data() + 4 * i, &v, 4);
    } else {
      const uint16_t b = toBf16(v);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

// The fold in rank order, ((x0 + x1) + x2) + ..., rounded to the type at every step.
std::vector<unsigned char> rankOrderSum(trncclDataType_t type, int n, size_t count) {
  std::vector<unsigned char> out(count * (type == trncclFloat32 ? 4 : 2));
  for (size_t i = 0; i < count; ++i) {
    float acc = inputValue(type, 0, i);
    for (int r = 1; r < n; ++r) {
      acc = acc + inputValue(type, r, i);
      if (type == trncclBfloat16) acc = fromBf16(toBf16(acc));
    }
    if (type == trncclFloat32) {
      std::memcpy(out.data() + 4 * i, &acc, 4);
    } else {
      const uint16_t b = toBf16(acc);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

enum class Coll { kAllReduce, kReduceScatter, kReduce };

struct Outcome {
  size_t differing = 0;  // elements of some rank's defined output that differ from the fold
  std::set<std::string> planned;
};

// Runs `coll` of `count` elements (per rank for reduce-scatter) on every rank, on device memory
// (in place: recvbuff inside sendbuff, as NCCL's rules put it), and compares each defined output
// with the rank-order fold.
Outcome runAndCompare(const Comms& comms, Coll coll, trncclDataType_t type, size_t count,
                      bool inPlace = false) {
  const int n = comms.size(), root = n - 1;
  const size_t elem = type == trncclFloat32 ? 4 : 2;
  const size_t sendCount = coll == Coll::kReduceScatter ? count * n : count;
  const std::vector<unsigned char> want = rankOrderSum(type, n, sendCount);
  std::vector<size_t> differing(n, 0);
  std::vector<std::string> planned(n);
  comms.run([&](int r) {
    std::vector<unsigned char> in = inputs(type, r, sendCount), out(count * elem);
    void *send = nullptr, *recv = nullptr;
    ASSERT_EQ(trnrtMalloc(&send, in.size()), trnrtSuccess);
    if (inPlace) {
      const size_t at = coll == Coll::kReduceScatter ? r * count * elem : 0;
      recv = static_cast<unsigned char*>(send) + at;
    } else {
      ASSERT_EQ(trnrtMalloc(&recv, out.size()), trnrtSuccess);
    }
    ASSERT_EQ(trnrtMemcpy(send, in.data(), in.size(), trnrtMemcpyHostToDevice), trnrtSuccess);
    trncclComm_t c = comms.comm(r);
    trncclResult_t res =
        coll == Coll::kAllReduce
            ? trncclAllReduce(send, recv, count, type, trncclSum, c, comms.stream(r))
        : coll == Coll::kReduceScatter
            ? trncclReduceScatter(send, recv, count, type, trncclSum, c, comms.stream(r))
            : trncclReduce(send, recv, count, type, trncclSum, root, c, comms.stream(r));
    EXPECT_EQ(res, trncclSuccess) << trncclGetLastError(c);
    EXPECT_EQ(trnrtStreamSynchronize(comms.stream(r)), trnrtSuccess);
    ASSERT_EQ(trnrtMemcpy(out.data(), recv, out.size(), trnrtMemcpyDeviceToHost), trnrtSuccess);
    planned[r] = c->impl->lastPlanned();
    const size_t first = coll == Coll::kReduceScatter ? r * count * elem : 0;
    if (coll != Coll::kReduce || r == root) {
      for (size_t i = 0; i < count; ++i) {
        differing[r] +=
            std::memcmp(out.data() + i * elem, want.data() + first + i * elem, elem) != 0;
      }
    }
    trnrtFree(send);
    if (!inPlace) trnrtFree(recv);
  });
  Outcome o;
  for (int r = 0; r < n; ++r) {
    o.differing += differing[r];
    o.planned.insert(planned[r]);
  }
  return o;
}

const char* collName(Coll c) {
  return c == Coll::kAllReduce       ? "allreduce"
         : c == Coll::kReduceScatter ? "reducescatter"
                                     : "reduce";
}

algorithms::Collective collective(Coll c) {
  return c == Coll::kAllReduce       ? algorithms::Collective::kAllReduce
         : c == Coll::kReduceScatter ? algorithms::Collective::kReduceScatter
                                     : algorithms::Collective::kReduce;
}

// The registry's descriptor of `name` for `coll`; null when it has none.
const algorithms::Algorithm* descriptor(Coll coll, const std::string& name) {
  for (const algorithms::Algorithm* a : algorithms::algorithmsFor(collective(coll))) {
    if (name == a->name) return a;
  }
  return nullptr;
}

// Whether some reducing collective's descriptor named `name` has property `has`.
bool anyDescriptor(const std::string& name, bool algorithms::Algorithm::*has) {
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce}) {
    const algorithms::Algorithm* a = descriptor(coll, name);
    if (a != nullptr && a->*has) return true;
  }
  return false;
}

// Every TRNCCL_ALGO the registry knows for the reducing collectives, and none; one slice and
// many; float32 and bf16; the three reducing collectives; 1 and 2 channels where the name
// uses channels (and for the tuner's own choice). Whatever runs must be an algorithm that
// claims the rank-order fold (the others fall back), and every algorithm of the registry that
// claims it must have run at least once (mesh for the small counts, ordered for the rest), so
// that each claim is checked against the host fold.
void expectRankOrderEverywhere(const Comms& comms) {
  std::vector<std::string> algos = {""};
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce}) {
    for (const algorithms::Algorithm* a : algorithms::algorithmsFor(collective(coll))) {
      if (std::find(algos.begin(), algos.end(), a->name) == algos.end()) algos.push_back(a->name);
    }
  }
  std::set<std::pair<Coll, std::string>> ran;
  ScopedTuning tuning(comms);
  for (const std::string& algo : algos) {
    // A name that declines falls back to the same choice whatever the channels: one count.
    const bool oneCount =
        !algo.empty() && (!anyDescriptor(algo, &algorithms::Algorithm::foldsInRankOrder) ||
                          !anyDescriptor(algo, &algorithms::Algorithm::usesChannels));
    for (int channels : {1, 2}) {
      if (oneCount && channels == 2) continue;
      tuning.set(algo, channels);
      for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce}) {
        for (trncclDataType_t type : {trncclFloat32, trncclBfloat16}) {
          for (size_t count : {size_t{1001}, size_t{300007}}) {
            SCOPED_TRACE(::testing::Message()
                         << collName(coll) << " " << count << " "
                         << (type == trncclFloat32 ? "float" : "bf16") << " TRNCCL_ALGO=" << algo
                         << " channels " << channels);
            Outcome o = runAndCompare(comms, coll, type, count);
            EXPECT_EQ(o.differing, 0u);
            ASSERT_EQ(o.planned.size(), 1u);
            const std::string name = *o.planned.begin();
            const algorithms::Algorithm* a = descriptor(coll, name);
            ASSERT_NE(a, nullptr) << name;
            EXPECT_TRUE(a->foldsInRankOrder) << name;
            ran.insert({coll, name});
          }
        }
      }
    }
  }
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce}) {
    for (const algorithms::Algorithm* a : algorithms::algorithmsFor(collective(coll))) {
      if (a->foldsInRankOrder) {
        EXPECT_TRUE(ran.count({coll, a->name})) << collName(coll) << " " << a->name << " never ran";
      }
    }
  }
}

TEST(Deterministic, ShmConfigFieldFourRanks) {
  Comms comms(4, config("shm", "trn1.32xlarge", 1), {});
  expectRankOrderEverywhere(comms);
}

// Over tcp, with 64 KiB buffers: 16 KiB slices (shm's are 64 KiB).
TEST(Deterministic, TcpEnvironmentFourRanks) {
  Comms comms(4, config("tcp", "trn1.32xlarge", -1),
              {{"TRNCCL_DETERMINISTIC", "1"},
               {"TRNCCL_TCP_BUFFER_BYTES", "65536"},
               {"TRNCCL_SOCKET_IFNAME", "lo"}});
  expectRankOrderEverywhere(comms);
}

// Two emulated instances of 2 ranks (shm inside, tcp across; the hierarchical algorithm is
// available), another description (other physical rings) and 32 KiB slices.
TEST(Deterministic, MixedTransportsOtherTopologyOtherSlices) {
  Comms comms(4, config("shm,tcp", "trn2.48xlarge", 1),
              {{"TRNCCL_EMU_RANKS_PER_NODE", "2"},
               {"TRNCCL_TCP_BUFFER_BYTES", "131072"},
               {"TRNCCL_SOCKET_IFNAME", "lo"}});
  expectRankOrderEverywhere(comms);
}

// The tuner's choice (mesh for the small count, ordered for the large), out of place and in
// place: mesh in place keeps the running value in scratch until the own slice is folded.
TEST(Deterministic, ThreeAndFiveRanksInAndOutOfPlace) {
  for (int n : {3, 5}) {
    Comms comms(n, config("shm", "trn1.32xlarge", 1), {});
    for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce}) {
      for (trncclDataType_t type : {trncclFloat32, trncclBfloat16}) {
        for (size_t count : {size_t{1001}, size_t{300007}}) {
          for (bool inPlace : {false, true}) {
            EXPECT_EQ(runAndCompare(comms, coll, type, count, inPlace).differing, 0u)
                << collName(coll) << " n " << n << " count " << count
                << (inPlace ? " in place" : "");
          }
        }
      }
    }
  }
}

// The same inputs with the mode off: the ring folds each block starting after its owner, so
// the bits differ from the rank-order fold (and the tests above would catch an algorithm that
// ignored the mode).
TEST(Deterministic, DefaultModeDiffers) {
  Comms comms(4, config("shm", "trn1.32xlarge", 0), {});
  {
    ScopedTuning tuning(comms, "ring");
    for (trncclDataType_t type : {trncclFloat32, trncclBfloat16}) {
      for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter}) {
        Outcome o = runAndCompare(comms, coll, type, 300007);
        EXPECT_EQ(*o.planned.begin(), "ring");
        EXPECT_GT(o.differing, 0u) << collName(coll);
      }
    }
  }
  // And what the tuner picks by itself for a large all-reduce differs too.
  EXPECT_GT(runAndCompare(comms, Coll::kAllReduce, trncclFloat32, 300007).differing, 0u);
}

// The planner's side: a descriptor that says nothing declines; forcing a declining algorithm
// in deterministic mode falls back to one that folds in rank order; data movement is free.
TEST(Deterministic, PlannerEnforcesTheDescriptorProperty) {
  static_assert(!algorithms::Algorithm{}.foldsInRankOrder);
  auto view = plan::describeTopology("trn1.32xlarge", 8);
  ASSERT_TRUE(view.isOk());
  for (algorithms::Collective coll : algorithms::kCollectives) {
    for (const algorithms::Algorithm* algo : algorithms::algorithmsFor(coll)) {
      for (size_t bytes : {size_t{1024}, size_t{64} << 20}) {
        algorithms::CollArgs a;
        a.coll = coll;
        a.count = bytes / 4;
        a.nranks = 8;
        a.shape = view->shape;
        a.deterministic = true;
        auto c = plan::choose(a, view->links, plan::Overrides{algo->name, 0});
        ASSERT_TRUE(c.isOk()) << c.status().message();
        if (algorithms::reduces(coll)) {
          EXPECT_TRUE(c->algorithm->foldsInRankOrder) << c->algorithm->name;
        }
        if (algo->foldsInRankOrder && algo->supports(a)) {
          EXPECT_EQ(c->algorithm, algo) << algo->name;
        }
      }
    }
  }
}

// Deterministic mode's small messages: mesh keeps the rank order too, and its two rounds cost
// less than ordered's direct round plus ring all-gather, so the tuner takes it while one block
// fits a connection's buffer twice (mesh's supports), and ordered above.
TEST(Deterministic, TunerTakesMeshForSmallMessages) {
  auto view = plan::describeTopology("trn1.32xlarge", 4);
  ASSERT_TRUE(view.isOk());
  for (algorithms::Collective coll :
       {algorithms::Collective::kAllReduce, algorithms::Collective::kReduceScatter}) {
    for (size_t bytes : {size_t{8}, size_t{1024}, size_t{64} << 10, size_t{64} << 20}) {
      algorithms::CollArgs a;
      a.coll = coll;
      a.count = bytes / 4;
      a.nranks = 4;
      a.sliceBytes = 64 * 1024;
      a.shape = view->shape;
      a.deterministic = true;
      auto c = plan::choose(a, view->links);
      ASSERT_TRUE(c.isOk()) << c.status().message();
      const bool small = bytes <= 64 * 1024;
      EXPECT_EQ(std::string(c->algorithm->name), small ? "mesh" : "ordered")
          << algorithms::collectiveName(coll) << " " << bytes << " B";
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
