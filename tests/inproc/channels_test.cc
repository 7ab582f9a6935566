// Ring algorithms over the topology's physical rings and over several channels: the rings
// the communicator derives (they step along links, share no directed edge), the schedules
// (peers, concurrent groups), the tuner's channel choice and TRNCCL_NCHANNELS, and results of
// all-reduce, all-gather and reduce-scatter on an emulated trn1.32xlarge at 16 and 32 ranks
// with 1 and 2 channels against the independent reference.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/allgather/ring.h"
#include "algorithms/allreduce/ring.h"
#include "algorithms/reducescatter/ring.h"
#include "algorithms/ring_steps.h"
#include "algorithms/torus2d.h"
#include "api/handle.h"
#include "plan/planner.h"
#include "plan/topology_view.h"
#include "support/collective_cases.h"
#include "support/ranks.h"
#include "support/tuning.h"
#include "topology/layout.h"
#include "topology/loader.h"
#include "topology/rings.h"
#include "topology/torus.h"

namespace trnccl::testing {
namespace {

using algorithms::Collective;

std::shared_ptr<const algorithms::Shape> shapeOf(int nranks) {
  auto view = plan::describeTopology("trn1.32xlarge", nranks);
  EXPECT_TRUE(view.isOk()) << view.status().message();
  return view ? view->shape : nullptr;
}

TEST(PhysicalRings, Trn1WholeTorusGivesTwoChannelsAlongLinks) {
  auto shape = shapeOf(32);
  ASSERT_NE(shape, nullptr);
  auto topo = topology::loadTopology("trn1.32xlarge");
  ASSERT_TRUE(topo.isOk());
  auto layout = topology::makeLayout(*topo, 32);
  ASSERT_TRUE(layout.isOk());
  ASSERT_EQ(shape->rings.size(), 2u);
  auto rings = algorithms::channelRings(shape.get(), 32);
  ASSERT_EQ(rings.size(), 2u);  // ring 1 runs backwards: no shared directed same-chip step
  for (const auto& ring : rings) EXPECT_TRUE(topology::ringFollowsLinks(*topo, *layout, ring));
  // Rank 0 (chip 0, core 0) is entered from a torus neighbour chip in channel 0, not from 31.
  const algorithms::Ring ring0 = algorithms::ringAt(rings[0], 0);
  const int prevChip = layout->place(ring0.prev()).chip;
  EXPECT_NE(ring0.prev(), 31);
  EXPECT_TRUE(topology::areTorusNeighbors(prevChip, 0, 4, 4)) << "chip " << prevChip;
  EXPECT_NE(rings[0], rings[1]);
}

TEST(PhysicalRings, Trn1TwoRowsGiveOneSnakeRing) {
  auto shape = shapeOf(16);
  ASSERT_NE(shape, nullptr);
  auto topo = topology::loadTopology("trn1.32xlarge");
  auto layout = topology::makeLayout(*topo, 16);
  ASSERT_TRUE(layout.isOk());
  auto rings = algorithms::channelRings(shape.get(), 16);
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_TRUE(topology::ringFollowsLinks(*topo, *layout, rings[0]));
  std::vector<int> natural(16);
  for (int i = 0; i < 16; ++i) natural[i] = i;
  EXPECT_NE(rings[0], natural);  // 0..15 would jump from chip 7 back to chip 0
}

TEST(PhysicalRings, SharedDirectedEdgesAndBadRingsFallBack) {
  algorithms::Shape shape;
  shape.rings = {{0, 1, 2, 3}, {2, 3, 1, 0}, {0, 3, 2, 1}, {0, 0, 1, 2}};
  // {2,3,1,0} repeats 2 -> 3; {0,3,2,1} is the reverse and shares none; {0,0,1,2} is no
  // permutation.
  auto rings = algorithms::channelRings(&shape, 4);
  ASSERT_EQ(rings.size(), 2u);
  EXPECT_EQ(rings[1], (std::vector<int>{0, 3, 2, 1}));
  algorithms::Shape odd;
  odd.rings = {{0, 1, 2}};  // a ring of another communicator size
  auto natural = algorithms::channelRings(&odd, 4);
  ASSERT_EQ(natural.size(), 1u);
  EXPECT_EQ(natural[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(algorithms::channelRings(nullptr, 2).size(), 1u);
}

// The ring algorithm of a collective.
const algorithms::Algorithm& ringOf(Collective coll) {
  switch (coll) {
    case Collective::kAllGather:
      return algorithms::allgather::kRing;
    case Collective::kReduceScatter:
      return algorithms::reducescatter::kRing;
    default:
      return algorithms::allreduce::kRing;
  }
}

// Builds rank r's schedule of `coll` with `channels` over the trn1.32xlarge shape.
schedule::Schedule build(Collective coll, int nranks, int r, size_t count, int channels,
                         std::vector<std::byte>& send, std::vector<std::byte>& recv) {
  algorithms::CollArgs a;
  a.coll = coll;
  a.count = count;
  a.rank = r;
  a.nranks = nranks;
  a.sliceBytes = 4096;  // several slices per channel even for small buffers
  a.channels = channels;
  a.shape = shapeOf(nranks);
  const bool perRank = coll != Collective::kAllReduce;
  send.assign(count * 4 * (coll == Collective::kReduceScatter ? nranks : 1), std::byte{0});
  recv.assign(count * 4 * (perRank && coll == Collective::kAllGather ? nranks : 1), std::byte{0});
  a.send = send.data();
  a.recv = recv.data();
  return ringOf(coll).build(a);
}

// Every step talks to its channel ring's neighbours; the steps of one concurrent group never
// share a receive peer or a send peer; 2 channels run side by side.
TEST(ChannelSchedules, TwoChannelsUseBothRingsAndNeverShareAConnectionDirection) {
  auto rings = algorithms::channelRings(shapeOf(32).get(), 32);
  ASSERT_EQ(rings.size(), 2u);
  for (Collective coll :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    for (size_t count : {size_t{1}, size_t{33}, size_t{64 * 1024 + 5}}) {
      for (int r : {0, 7, 31}) {
        std::vector<std::byte> send, recv;
        auto s = build(coll, 32, r, count, 2, send, recv);
        std::set<int> sendPeers, recvPeers;
        std::set<int> groupSend, groupRecv;
        int groups = 0, paired = 0;
        for (size_t i = 0; i < s.steps().size(); ++i) {
          const auto& st = s.steps()[i];
          if (st.sendPeer >= 0) {
            EXPECT_TRUE(groupSend.insert(st.sendPeer).second) << "step " << i;
            sendPeers.insert(st.sendPeer);
          }
          if (st.recvPeer >= 0) {
            EXPECT_TRUE(groupRecv.insert(st.recvPeer).second) << "step " << i;
            recvPeers.insert(st.recvPeer);
          }
          if (st.withNext) ++paired;
          if (!st.withNext) {
            ++groups;
            groupSend.clear();
            groupRecv.clear();
          }
        }
        std::set<int> nexts, prevs;
        for (const auto& ring : rings) {
          nexts.insert(algorithms::ringAt(ring, r).next());
          prevs.insert(algorithms::ringAt(ring, r).prev());
        }
        const bool bothChannels = count * (coll == Collective::kAllReduce ? 1 : 32) >= 2 * 32;
        if (count >= 2) {
          EXPECT_EQ(sendPeers, nexts) << "rank " << r << " count " << count;
          EXPECT_EQ(recvPeers, prevs) << "rank " << r << " count " << count;
        }
        if (bothChannels && count >= 2) {
          EXPECT_GT(paired, 0);
        }
        EXPECT_GT(groups, 0);
      }
    }
  }
}

// 16 ranks fill two torus rows: one snake ring, so 2 channels fall back to 1; rank 0 still
// receives from a torus neighbour chip, not from rank 15 as the natural order would.
TEST(ChannelSchedules, OneRingFallsBackToOneChannelAlongLinks) {
  auto topo = topology::loadTopology("trn1.32xlarge");
  ASSERT_TRUE(topo.isOk());
  auto layout = topology::makeLayout(*topo, 16);
  ASSERT_TRUE(layout.isOk());
  std::vector<std::byte> send, recv;
  auto s = build(Collective::kAllReduce, 16, 0, 100000, 2, send, recv);
  std::set<int> recvPeers;
  for (const auto& st : s.steps()) {
    EXPECT_FALSE(st.withNext);
    if (st.recvPeer >= 0) recvPeers.insert(st.recvPeer);
  }
  ASSERT_EQ(recvPeers.size(), 1u);
  const int peer = *recvPeers.begin();
  EXPECT_NE(peer, 15);
  EXPECT_TRUE(topology::areTorusNeighbors(layout->place(peer).chip, 0, 4, 4)) << "rank " << peer;
}

// Channel counts of the ring for a call, whether or not the ring is the algorithm chosen.
int ringChannels(const plan::TopologyView& view, Collective coll, int nranks, size_t bytes) {
  algorithms::CollArgs a;
  a.coll = coll;
  a.type = device::DataType::kFloat32;
  a.count = bytes / 4 / (coll == Collective::kAllReduce ? 1 : nranks);
  a.nranks = nranks;
  a.sliceBytes = 256 * 1024;
  a.shape = view.shape;
  return plan::chooseChannels(ringOf(coll), a, view.links);
}

TEST(ChannelTuner, SmallMessagesOneChannelLargeOnesEveryRing) {
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  ASSERT_TRUE(view.isOk());
  for (Collective coll :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    EXPECT_EQ(ringChannels(*view, coll, 32, 1024), 1) << algorithms::collectiveName(coll);
    EXPECT_EQ(ringChannels(*view, coll, 32, 64 << 20), 2) << algorithms::collectiveName(coll);
  }
  // Forced to the ring, a large all-reduce plans 2 channels.
  algorithms::CollArgs a;
  a.coll = Collective::kAllReduce;
  a.count = (64 << 20) / 4;
  a.nranks = 32;
  a.shape = view->shape;
  auto c = plan::choose(a, view->links, plan::Overrides{"ring", 0});
  ASSERT_TRUE(c.isOk());
  EXPECT_STREQ(c->algorithm->name, "ring");
  EXPECT_EQ(c->channels, 2);
  // Other algorithms run on one channel.
  EXPECT_EQ(plan::chooseChannels(algorithms::kTorus2dAllReduce, a, view->links), 1);
  // One physical ring at 16 ranks.
  auto view16 = plan::describeTopology("trn1.32xlarge", 16);
  ASSERT_TRUE(view16.isOk());
  EXPECT_EQ(ringChannels(*view16, Collective::kAllReduce, 16, 64 << 20), 1);
}

TEST(ChannelTuner, NchannelsOverrides) {
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  ASSERT_TRUE(view.isOk());
  setenv("TRNCCL_NCHANNELS", "1", 1);
  EXPECT_EQ(ringChannels(*view, Collective::kAllReduce, 32, 64 << 20), 1);
  setenv("TRNCCL_NCHANNELS", "2", 1);
  EXPECT_EQ(ringChannels(*view, Collective::kAllReduce, 32, 8), 2);
  setenv("TRNCCL_NCHANNELS", "8", 1);  // capped at the usable rings
  EXPECT_EQ(ringChannels(*view, Collective::kAllGather, 32, 8), 2);
  unsetenv("TRNCCL_NCHANNELS");
}

// Results of the ring collectives through the API, forced to the ring and a channel count as
// TRNCCL_ALGO and TRNCCL_NCHANNELS would (support/tuning.h), against the reference; all-reduce and
// all-gather bitwise equal on all ranks.
struct ChannelCase {
  int channels;
  Case c;
};

std::string channelCaseName(const ::testing::TestParamInfo<ChannelCase>& info) {
  return fmt::format("ch{}_{}", info.param.channels, caseName({info.param.c, info.index}));
}

class RingChannels : public ::testing::TestWithParam<ChannelCase> {};

TEST_P(RingChannels, MatchesReference) {
  const ChannelCase& p = GetParam();
  const Case& c = p.c;
  Ranks& ranks = Ranks::get(c.nranks);
  std::vector<std::vector<unsigned char>> out(c.nranks);
  std::vector<std::string> planned(c.nranks);
  {
    ScopedTuning tuning(ranks, "ring", p.channels);
    ranks.run([&](int r) {
      out[r] = runOnRank(c, r, ranks.comm(r), ranks.stream(r));
      planned[r] = ranks.comm(r)->impl->lastPlanned();
    });
  }
  if (c.count > 0) {
    EXPECT_EQ(planned[0], "ring");
  }
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(countWrong(c, r, out[r]), 0u) << "rank " << r;
  if (sameOnAllRanks(c.coll)) {
    for (int r = 1; r < c.nranks; ++r) EXPECT_TRUE(out[r] == out[0]) << "rank " << r;
  }
}

std::vector<ChannelCase> channelMatrix() {
  std::vector<ChannelCase> cases;
  for (int n : {16, 32}) {
    for (int channels : {1, 2}) {
      for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter}) {
        for (auto type : {trncclFloat32, trncclBfloat16, trncclInt32}) {
          for (auto op : {trncclSum, trncclAvg, trncclMax}) {
            if (coll == Coll::kAllGather && op != trncclSum) continue;
            // 1 < channels; 7 and 4099 not divisible by channels x ranks; 70001 spans several
            // slices of a part.
            for (size_t count : {size_t{1}, size_t{7}, size_t{4096 + 3}, size_t{70001}}) {
              if (count == 70001 && (type != trncclFloat32 || coll != Coll::kAllReduce)) continue;
              bool inPlace = (count + static_cast<size_t>(op)) % 2 == 1;
              cases.push_back({channels, Case{coll, n, type, op, count, inPlace, 0}});
            }
          }
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Channels, RingChannels, ::testing::ValuesIn(channelMatrix()),
                         channelCaseName);

// Small shm FIFOs (slice 4 KiB = 1024 floats): all-reduce parts span several iterations, and
// the two channels' iteration counts differ (parts of 32769 and 32768 elements, 32768 per
// iteration at 32 ranks), so one channel runs its last iteration alone.
TEST(RingChannelsSmallSlices, UnequalIterationCountsPerChannel) {
  setenv("TRNCCL_SHM_FIFO_BYTES", "16384", 1);
  auto ranks = std::make_unique<Ranks>(32);
  unsetenv("TRNCCL_SHM_FIFO_BYTES");
  ScopedTuning tuning(*ranks);
  for (int channels : {1, 2}) {
    tuning.set("ring", channels);
    for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather}) {
      const size_t count = coll == Coll::kAllReduce ? 2 * 32768 + 1 : 2 * 1024 + 1;
      Case c{coll, 32, trncclFloat32, trncclSum, count, false, 0};
      std::vector<std::vector<unsigned char>> out(32);
      ranks->run([&](int r) { out[r] = runOnRank(c, r, ranks->comm(r), ranks->stream(r)); });
      for (int r = 0; r < 32; ++r) {
        EXPECT_EQ(countWrong(c, r, out[r]), 0u) << collName(coll) << " rank " << r;
      }
      if (sameOnAllRanks(coll)) {
        for (int r = 1; r < 32; ++r) EXPECT_TRUE(out[r] == out[0]) << "rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
