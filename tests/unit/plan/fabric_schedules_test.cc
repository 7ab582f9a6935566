// The fabric algorithms' schedules (issue 16) at the rank counts of whole UltraServers, run in
// one thread by ScheduleRunner against small FIFOs (so every buffer streams through many
// slices): every rank finishes (no deadlock, every message matched), the sums are right, and
// every rank holds the same bytes. The real executor runs the same algorithms in
// tests/inproc/fabric_test.cc at 16 to 64 ranks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "plan/topology_view.h"
#include "support/schedule_runner.h"

namespace trnccl::testing {
namespace {

using algorithms::Collective;

struct Fabric {
  std::string topology;
  int nranks;
  int perInstance;  // TRNCCL_EMU_RANKS_PER_NODE; 0: the description's
};

const algorithms::Algorithm* find(Collective coll, const std::string& name) {
  for (const algorithms::Algorithm* a : algorithms::algorithmsFor(coll)) {
    if (name == a->name) return a;
  }
  return nullptr;
}

// The input of element i on rank r: small integers, so float sums are exact in any order.
float input(int r, size_t i) {
  return static_cast<float>(static_cast<int>((r * 7 + i * 3) % 9) - 4);
}

// Runs `algo` for `coll` on every rank of `f` (float32 sum, `count` as the API's), with FIFOs
// of `fifo` bytes (pipeline slices of a quarter), and checks the outcome.
void runAll(const Fabric& f, const std::string& algo, Collective coll, size_t count, size_t fifo,
            bool inPlace) {
  if (f.perInstance > 0)
    setenv("TRNCCL_EMU_RANKS_PER_NODE", std::to_string(f.perInstance).c_str(), 1);
  auto view = plan::describeTopology(f.topology, f.nranks);
  unsetenv("TRNCCL_EMU_RANKS_PER_NODE");
  ASSERT_TRUE(view) << view.status().message();
  const algorithms::Algorithm* a = find(coll, algo);
  ASSERT_NE(a, nullptr) << algo;
  const int n = f.nranks;
  const bool perRank = coll != Collective::kAllReduce;
  const size_t sendCount = coll == Collective::kReduceScatter ? count * n : count;
  const size_t recvCount = coll == Collective::kAllGather ? count * n : count;
  std::vector<std::vector<float>> bufs(n);
  std::vector<schedule::Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    bufs[r].assign(sendCount + recvCount, 0);
    float* send = bufs[r].data();
    float* recv = inPlace ? send : send + sendCount;
    if (inPlace && coll == Collective::kAllGather) send = recv + r * count;
    if (inPlace && coll == Collective::kReduceScatter) recv = send + r * count;
    for (size_t i = 0; i < sendCount; ++i)
      send[i] = input(r, perRank && coll == Collective::kAllGather ? r * count + i : i);
    algorithms::CollArgs args;
    args.coll = coll;
    args.send = send;
    args.recv = recv;
    args.count = count;
    args.rank = r;
    args.nranks = n;
    args.sliceBytes = fifo / 4;
    args.shape = view->shape;
    ASSERT_TRUE(a->supports(args)) << algo << " declines " << f.topology << " at " << n;
    schedules.push_back(a->build(args));
  }
  ScheduleRunner runner(schedules, fifo);
  ASSERT_TRUE(runner.run()) << runner.stuck();
  // The sums of every element of the send buffers (exact: small integers).
  std::vector<float> sum(coll == Collective::kAllGather ? 0 : sendCount, 0);
  for (int q = 0; q < n; ++q) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += input(q, i);
  }
  for (int r = 0; r < n; ++r) {
    const float* send = bufs[r].data();
    const float* recv = inPlace ? send : send + sendCount;
    if (inPlace && coll == Collective::kReduceScatter) recv = send + r * count;
    for (size_t i = 0; i < recvCount; ++i) {
      const float want = coll == Collective::kAllGather ? input(static_cast<int>(i / count), i)
                         : coll == Collective::kReduceScatter ? sum[r * count + i]
                                                              : sum[i];
      ASSERT_EQ(recv[i], want) << algo << " rank " << r << " element " << i;
    }
  }
}

// The runner itself: two ranks that each wait to receive before they send never finish, and a
// message of the wrong size is named.
TEST(ScheduleRunner, FindsDeadlocksAndMismatchedMessages) {
  std::vector<float> a(8), b(8);
  auto recvThenSend = [](float* buf, int peer, size_t recvCount) {
    schedule::Schedule s;
    s.add(schedule::Step{
        .prim = schedule::Primitive::kRecv, .recvPeer = peer, .dst = buf, .count = recvCount});
    s.add(schedule::Step{
        .prim = schedule::Primitive::kSend, .sendPeer = peer, .src = buf, .count = 8});
    return s;
  };
  std::vector<schedule::Schedule> deadlock = {recvThenSend(a.data(), 1, 8),
                                              recvThenSend(b.data(), 0, 8)};
  ScheduleRunner stuck(deadlock, 1024);
  EXPECT_FALSE(stuck.run());
  EXPECT_NE(stuck.stuck().find("rank 1 at step 0: [recv recv 0"), std::string::npos)
      << stuck.stuck();

  std::vector<schedule::Schedule> mismatch(2);
  mismatch[0].add(schedule::Step{
      .prim = schedule::Primitive::kSend, .sendPeer = 1, .src = a.data(), .count = 8});
  mismatch[1].add(schedule::Step{
      .prim = schedule::Primitive::kRecv, .recvPeer = 0, .dst = b.data(), .count = 4});
  ScheduleRunner wrong(mismatch, 1024);
  EXPECT_FALSE(wrong.run());
  EXPECT_NE(wrong.stuck().find("rank 1 expects 16 bytes from rank 0, which sends 32"),
            std::string::npos)
      << wrong.stuck();
}

// 16 KiB FIFOs: 4 KiB slices, so these counts stream through many of them.
constexpr size_t kFifo = 16 * 1024;

TEST(FabricSchedules, KangaRingOnWholeChips) {
  for (const Fabric& f : {Fabric{"trn1.32xlarge", 16, 0}, Fabric{"trn1.32xlarge", 32, 0},
                          Fabric{"trn2.48xlarge-lnc2", 64, 0}, Fabric{"trn2.48xlarge", 128, 0},
                          Fabric{"trn2-ultraserver", 128, 0}}) {
    SCOPED_TRACE(f.topology + " " + std::to_string(f.nranks));
    runAll(f, "kangaring", Collective::kAllReduce, 20011, kFifo, false);
    runAll(f, "kangaring", Collective::kAllReduce, 3, kFifo, true);
  }
}

TEST(FabricSchedules, Torus3dOnTheUltraServerAndASmallTorus) {
  const std::string small =
      std::string(TRNCCL_SOURCE_DIR) + "/tests/support/topologies/torus3d-2x2x4.yaml";
  for (const Fabric& f : {Fabric{"trn2-ultraserver", 512, 0}, Fabric{"trn2-ultraserver", 64, 16},
                          Fabric{"trn2-ultraserver", 64, 0}, Fabric{small, 16, 0}}) {
    SCOPED_TRACE(f.topology + " " + std::to_string(f.nranks));
    runAll(f, "torus3d", Collective::kAllReduce, 20011, kFifo, false);
    runAll(f, "torus3d", Collective::kAllGather, 41, kFifo, true);
    runAll(f, "torus3d", Collective::kReduceScatter, 41, kFifo, false);
  }
}

TEST(FabricSchedules, SwitchAlgorithmsOnBothTrn3UltraServers) {
  // oneshot sends the whole buffer to every peer: n^2 messages, so few elements at full size.
  for (const Fabric& f :
       {Fabric{"trn3-ultraserver-gen1", 512, 0}, Fabric{"trn3-ultraserver-gen2", 1152, 0}}) {
    SCOPED_TRACE(f.topology);
    runAll(f, "oneshot", Collective::kAllReduce, 7, kFifo, true);
    runAll(f, "twoshot", Collective::kAllReduce, 4099, kFifo, false);
    runAll(f, "twotier", Collective::kAllReduce, 20011, kFifo, true);
  }
  runAll({"trn3-ultraserver-gen1", 16, 0}, "oneshot", Collective::kAllReduce, 1001, kFifo, false);
}

}  // namespace
}  // namespace trnccl::testing
