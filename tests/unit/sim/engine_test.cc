// The engine's event ordering on cases small enough to time by hand (docs/SIMULATOR.md, "The
// model"): one EFA hop, a 2-rank ring all-reduce over one link, a 4-rank mesh all-gather on a
// switch. Each expected time is derived in the comment above it.
#include <gtest/gtest.h>

#include "algorithms/allreduce/ring.h"
#include "algorithms/mesh.h"
#include "sim_test_util.h"

namespace trnccl::sim {
namespace {

using schedule::Primitive;
using schedule::Step;
using testing::bytesSchedule;
using testing::recvFrom;
using testing::sendTo;
using testing::simulatorFor;

// One EFA hop of 1 MB (eager: the default buffer is 1 MiB): rank 0's NIC takes 1e6 / 10e3 =
// 100 µs to send it; it reaches rank 1 15 µs later.
TEST(SimEngine, OneEfaHop) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 2);
  auto out = sim.schedules([](int r) {
    return r == 0 ? bytesSchedule(2, {{sendTo(1, 1'000'000)}})
                  : bytesSchedule(2, {{recvFrom(0, 1'000'000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 100);
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 115);
  EXPECT_DOUBLE_EQ(out->timeUs, 115);
  EXPECT_EQ(out->messages, 1u);
}

// Across instances the device's per-message cost (1 µs here) is the EFA NIC's: rank 0's NIC sends
// two 1 MB messages in 101 µs each (done at 202), the second lands at 217. The tuner's LinkModel
// reads the same figure.
TEST(SimEngine, EachMessageCostsItsIssuer) {
  topology::Topology t = testing::oneChipInstancesOverEfa();
  t.device.messageUs = 1;
  Simulator sim = simulatorFor(t, 2);
  EXPECT_DOUBLE_EQ(sim.view().links.messageUs, 1);
  auto out = sim.schedules([](int r) {
    return r == 0 ? bytesSchedule(2, {{sendTo(1, 1'000'000), sendTo(1, 1'000'000)}})
                  : bytesSchedule(2, {{recvFrom(0, 1'000'000), recvFrom(0, 1'000'000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 202);
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 217);
}

// A call's own cost (the device's callUs, 3 µs here) delays each rank's first group, once: the
// one-hop exchange above, now of two messages in a row (two groups), ends at 3 + 100 + 100 (rank
// 0's NIC) and lands at 218; rank 1's end is the arrival, not a second call cost.
TEST(SimEngine, ACallCostsItsRanksOnceBeforeTheirFirstStep) {
  topology::Topology t = testing::oneChipInstancesOverEfa();
  t.device.callUs = 3;
  Simulator sim = simulatorFor(t, 2);
  auto out = sim.schedules([](int r) {
    return r == 0 ? bytesSchedule(2, {{sendTo(1, 1'000'000)}, {sendTo(1, 1'000'000)}})
                  : bytesSchedule(2, {{recvFrom(0, 1'000'000)}, {recvFrom(0, 1'000'000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 203);
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 218);
  EXPECT_DOUBLE_EQ(out->timeUs, 218);
}

// The link between two chips of two cores is asked for in time order even though each rank
// issues all its messages at the start (1 µs each in its own DMA queue): rank 0 sends to rank 1
// (its chip), then to ranks 2 and 3 (the link, issued at 2 and 3); rank 1 sends to rank 2,
// issued at 1. The link (1000 B at 1 GB/s, 1 µs; 2 µs latency) carries 1 -> 2 at 1..2 (lands
// at 4), 0 -> 2 at 2..3 (lands at 5), 0 -> 3 at 3..4 (lands at 6): rank 1's send is over at 2,
// rank 2 has both at 5. (Claimed in the order the ranks' groups began, rank 0's later messages
// would hold the link until 4 and rank 2 would wait until 7.)
TEST(SimEngine, ALinkIsAskedForInTimeOrder) {
  topology::Topology t = testing::twoChipsOneLink();
  t.device.coresPerChip = 2;
  t.device.messageUs = 1;
  Simulator sim = simulatorFor(t, 4);
  auto out = sim.schedules([](int r) {
    switch (r) {
      case 0:
        return bytesSchedule(4, {{sendTo(1, 1000), sendTo(2, 1000), sendTo(3, 1000)}});
      case 1:
        return bytesSchedule(4, {{sendTo(2, 1000), recvFrom(0, 1000)}});
      case 2:
        return bytesSchedule(4, {{recvFrom(0, 1000), recvFrom(1, 1000)}});
      default:
        return bytesSchedule(4, {{recvFrom(0, 1000)}});
    }
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_LT(out->rankEndUs[1], 3);
  EXPECT_DOUBLE_EQ(out->rankEndUs[2], 5);
  EXPECT_DOUBLE_EQ(out->rankEndUs[3], 6);
}

// Within an instance the message cost (1 µs) is the sending rank's DMA queue's, one message
// after another: 1000 B each over 1 GB/s, 2 µs; the first is issued at 1 (link 1..2, lands at
// 4), the second at 2 (link 2..3, lands at 5).
TEST(SimEngine, EachMessageCostsItsSendersQueue) {
  topology::Topology t = testing::twoChipsOneLink();
  t.device.messageUs = 1;
  Simulator sim = simulatorFor(t, 2);
  auto out = sim.schedules([](int r) {
    return r == 0 ? bytesSchedule(2, {{sendTo(1, 1000), sendTo(1, 1000)}})
                  : bytesSchedule(2, {{recvFrom(0, 1000), recvFrom(0, 1000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 3);
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 5);
}

// Working-set bands: the ports carry 4 GB/s for a working set of at most 2000 B, 2 GB/s up to
// 4000 B, else 1 GB/s; HBM moves 8 GB/s up to 2000 B, else 2 GB/s. Rank 0 sends 1000 B from
// one buffer; rank 1 receives them into another, then copies c bytes between two more: the
// call's working set is rank 1's 1000 + 2c bytes. The message leaves rank 0 after 1000 B at the
// port's rate and lands 1 µs later; the copy then takes 2c bytes of HBM traffic:
//   c =  500: 2000 B, 4 GB/s: sent at 0.25, landed 1.25, copied by 1.25 + 1000 / 8000 = 1.375;
//   c = 1500: 4000 B, 2 GB/s: sent at 0.5, landed 1.5, copied by 1.5 + 3000 / 2000 = 3;
//   c = 2000: 5000 B, above every band: sent at 1, landed 2, copied by 2 + 4000 / 2000 = 4,
// which is also what the description without bands gives.
TEST(SimEngine, RatesFollowTheWorkingSet) {
  auto at = [](uintptr_t k) { return reinterpret_cast<std::byte*>(k << 16); };
  auto run = [&](const topology::Topology& t, size_t copyBytes) {
    Simulator sim = simulatorFor(t, 2);
    auto out = sim.schedules([&](int r) {
      if (r == 0) {
        return bytesSchedule(
            2, {{Step{.prim = Primitive::kSend, .sendPeer = 1, .src = at(1), .count = 1000}}});
      }
      return bytesSchedule(
          2, {{Step{.prim = Primitive::kRecv, .recvPeer = 0, .dst = at(2), .count = 1000}},
              {Step{.prim = Primitive::kCopy, .src = at(3), .dst = at(4), .count = copyBytes}}});
    });
    EXPECT_TRUE(out) << out.status().message();
    return out ? std::pair{out->rankEndUs[0], out->rankEndUs[1]} : std::pair{-1.0, -1.0};
  };
  topology::Topology t = testing::fourChipsOnASwitch();
  t.fabric.link.bands = {{2000, 4}, {4000, 2}};
  t.device.hbmBands = {{2000, 8}};
  EXPECT_EQ(run(t, 500), (std::pair{0.25, 1.375}));
  EXPECT_EQ(run(t, 1500), (std::pair{0.5, 3.0}));
  EXPECT_EQ(run(t, 2000), (std::pair{1.0, 4.0}));
  EXPECT_EQ(run(testing::fourChipsOnASwitch(), 500), (std::pair{1.0, 2.5}));
}

// Two senders into one NIC: rank 2's NIC takes the messages one after the other, so the second
// arrives 100 µs after the first (215), while each sender's own NIC was done at 100.
TEST(SimEngine, MessagesShareANic) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 3);
  auto out = sim.schedules([](int r) {
    if (r < 2) return bytesSchedule(3, {{sendTo(2, 1'000'000)}});
    return bytesSchedule(3, {{recvFrom(0, 1'000'000), recvFrom(1, 1'000'000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 100);
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 100);
  EXPECT_DOUBLE_EQ(out->rankEndUs[2], 215);
}

// A send above the eager size waits for its receive: rank 1 first receives 1 MB from rank 2
// (arrives at 115), then begins the receive of rank 0's 2 MB, which only then leaves rank 0
// (200 µs on the NIC) and lands at 115 + 200 + 15 = 330. A sync send is over when it landed.
TEST(SimEngine, LargeSendWaitsForItsReceive) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 3);
  auto out = sim.schedules([](int r) {
    if (r == 0) return bytesSchedule(3, {{sendTo(1, 2'000'000, /*sync=*/true)}});
    if (r == 2) return bytesSchedule(3, {{sendTo(1, 1'000'000)}});
    return bytesSchedule(3, {{recvFrom(2, 1'000'000)}, {recvFrom(0, 2'000'000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 330);
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 330);
}

// The library's ring all-reduce, 2 ranks, 2000 floats (blocks of 4000 B), over one link of
// 1 GB/s and 2 µs each way; a rank reduces 1000 B/µs; pieces of 1000 B. Per rank:
//   group 1, send the other block: link busy 0..4, lands 2..6; the send is over at 4.
//   group 2 (at 4), recvReduceCopySend its block: reduced by max(6 + 1, 4 + 4) = 8; the first
//     piece arrived at 3, was reduced at max(3, 4) + 1 = 5, so the forward leaves at 5 and,
//     a piece behind the reduction, ends at 8 + 1 = 9 (link free since 4): the group ends at 9.
//   group 3 (at 9), recv the other final block: it lands by 9 + 2 = 11.
TEST(SimEngine, TwoRankRingAllReduce) {
  EngineOptions o;
  o.pieceBytes = 1000;
  Simulator sim = simulatorFor(testing::twoChipsOneLink(), 2, o);
  algorithms::CollArgs args;
  args.count = 2000;
  auto run = sim.collective(args, &algorithms::allreduce::kRing, 1);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_EQ(run->outcome.steps, 6u);
  EXPECT_DOUBLE_EQ(run->outcome.rankEndUs[0], 11);
  EXPECT_DOUBLE_EQ(run->outcome.rankEndUs[1], 11);
}

// The library's mesh all-gather, 4 ranks of 250 floats (1000 B) on a switch (ports 1 GB/s,
// 1 µs through it): the own block is copied (2000 B of HBM at 2 GB/s: 1 µs), then each rank
// sends its block to its 3 peers one after the other on its port (1..2, 2..3, 3..4). In each
// of those slots every rank sends to a different peer, so no port down waits: the last block
// lands at 4 + 1 = 5 everywhere.
TEST(SimEngine, FourRankMeshAllGather) {
  Simulator sim = simulatorFor(testing::fourChipsOnASwitch(), 4);
  algorithms::CollArgs args;
  args.coll = algorithms::Collective::kAllGather;
  args.count = 250;
  auto run = sim.collective(args, &algorithms::kMeshAllGather);
  ASSERT_TRUE(run) << run.status().message();
  for (int r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(run->outcome.rankEndUs[r], 5) << "rank " << r;
  EXPECT_EQ(run->outcome.messages, 12u);
}

TEST(SimEngine, DeadlockIsNamed) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 2);
  auto out = sim.schedules([](int r) {  // both receive first, and their sends are too large
    return bytesSchedule(2, {{recvFrom(1 - r, 8)}, {sendTo(1 - r, 8)}});
  });
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("deadlock: rank 0 waits forever in step 0 (recv"),
            std::string::npos)
      << out.status().message();
}

TEST(SimEngine, MismatchedSizesAreAnError) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 2);
  auto out = sim.schedules([](int r) {
    return r == 0 ? bytesSchedule(2, {{sendTo(1, 8)}}) : bytesSchedule(2, {{recvFrom(0, 16)}});
  });
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("rank 0 sends 8 bytes to rank 1, which receives 16"),
            std::string::npos)
      << out.status().message();
}

TEST(SimEngine, UnmatchedSendIsAnError) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 2);
  auto out = sim.schedules(
      [](int r) { return r == 0 ? bytesSchedule(2, {{sendTo(1, 8)}}) : bytesSchedule(2, {}); });
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("rank 0 sent rank 1 a message it never received"),
            std::string::npos)
      << out.status().message();
}

// A run that stopped on an error leaves a message queued; the thread's next run reuses the
// tables and must not see it: rank 1's receive matches its own run's send (one EFA hop, 115).
TEST(SimEngine, ARunAfterAFailedOneStartsClean) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 2);
  auto failed = sim.schedules(
      [](int r) { return r == 0 ? bytesSchedule(2, {{sendTo(1, 8)}}) : bytesSchedule(2, {}); });
  ASSERT_FALSE(failed);
  auto out = sim.schedules([](int r) {
    return r == 0 ? bytesSchedule(2, {{sendTo(1, 1'000'000)}})
                  : bytesSchedule(2, {{recvFrom(0, 1'000'000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 115);
  EXPECT_EQ(out->messages, 1u);
}

// Several messages on one connection at once (beyond the one its slot holds), matched in the
// order each side began them, over the link of 1 GB/s and 2 µs; a copy of c bytes takes
// 2c / 3000 µs (HBM 3 GB/s). The sizes differ, so a match out of order would be an error.
//   Sender ahead: rank 0 sends 1000, 2000, 3000 B in three groups (link 0..1, 1..3, 3..6; they
//   land at 3, 5, 8) while rank 1 copies 9000 B (6 µs), then receives all three: done at 8.
//   Receiver ahead: rank 1 receives the three at 0; rank 0 copies (6 µs) then sends them in one
//   group: link 6..7, 7..9, 9..12, so rank 0 is done at 12 and rank 1 at 14.
TEST(SimEngine, MessagesQueueOnAConnectionInOrder) {
  auto at = [](uintptr_t k) { return reinterpret_cast<std::byte*>(k << 16); };
  const Step copy{.prim = Primitive::kCopy, .src = at(1), .dst = at(2), .count = 9000};
  const std::vector<Step> sends{sendTo(1, 1000), sendTo(1, 2000), sendTo(1, 3000)};
  const std::vector<Step> recvs{recvFrom(0, 1000), recvFrom(0, 2000), recvFrom(0, 3000)};
  Simulator sim = simulatorFor(testing::twoChipsOneLink(), 2);
  auto ahead = sim.schedules([&](int r) {
    if (r == 0) return bytesSchedule(2, {{sends[0]}, {sends[1]}, {sends[2]}});
    return bytesSchedule(2, {{copy}, recvs});
  });
  ASSERT_TRUE(ahead) << ahead.status().message();
  EXPECT_DOUBLE_EQ(ahead->rankEndUs[0], 6);
  EXPECT_DOUBLE_EQ(ahead->rankEndUs[1], 8);
  EXPECT_EQ(ahead->messages, 3u);
  auto behind = sim.schedules([&](int r) {
    return r == 0 ? bytesSchedule(2, {{copy}, sends}) : bytesSchedule(2, {recvs});
  });
  ASSERT_TRUE(behind) << behind.status().message();
  EXPECT_DOUBLE_EQ(behind->rankEndUs[0], 12);
  EXPECT_DOUBLE_EQ(behind->rankEndUs[1], 14);
}

// The recorder sees every step (with its span) and every transfer on each resource it crossed.
TEST(SimEngine, RecorderSeesStepsAndTransfers) {
  Simulator sim = simulatorFor(testing::oneChipInstancesOverEfa(), 2);
  Recorder rec;
  auto out = sim.schedules(
      [](int r) {
        return r == 0 ? bytesSchedule(2, {{sendTo(1, 1'000'000)}})
                      : bytesSchedule(2, {{recvFrom(0, 1'000'000)}});
      },
      &rec);
  ASSERT_TRUE(out) << out.status().message();
  ASSERT_EQ(rec.steps.size(), 2u);
  ASSERT_EQ(rec.transfers.size(), 2u);  // the NIC out of instance 0, the NIC into instance 1
  for (const auto& s : rec.steps) {
    EXPECT_EQ(s.prim, s.rank == 0 ? Primitive::kSend : Primitive::kRecv);
    EXPECT_DOUBLE_EQ(s.endUs, s.rank == 0 ? 100 : 115);
  }
  EXPECT_EQ(sim.fabric().resourceName(rec.transfers[0].resource), "nic 0.0 out");
  EXPECT_EQ(sim.fabric().resourceName(rec.transfers[1].resource), "nic 1.0 in");
}

// A duplicated write and a local reduction on the switch (ports 1 GB/s, 1 µs; HBM 2 GB/s).
// Rank 0 sends 1000 bytes to ranks 1 and 2 at once: two transfers through its one port, 1 µs
// each, one after the other, so its step is over at 2; rank 1's copy leaves the port at 1 and
// arrives 1 µs later (2), rank 2's leaves at 2 and arrives at 3. Rank 3 reduces 1000 bytes
// locally: three bytes of HBM traffic per byte at 2000 B/µs, 1.5 µs.
TEST(SimEngine, DuplicatedWriteAndLocalReduce) {
  Simulator sim = simulatorFor(testing::fourChipsOnASwitch(), 4);
  auto out = sim.schedules([](int r) {
    if (r == 0) {
      return bytesSchedule(
          4, {{Step{.prim = Primitive::kSend, .sendPeer = 1, .sendPeer2 = 2, .count = 1000}}});
    }
    if (r == 3) return bytesSchedule(4, {{Step{.prim = Primitive::kReduce, .count = 1000}}});
    return bytesSchedule(4, {{recvFrom(0, 1000)}});
  });
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(out->rankEndUs[0], 2);
  EXPECT_DOUBLE_EQ(out->rankEndUs[1], 2);
  EXPECT_DOUBLE_EQ(out->rankEndUs[2], 3);
  EXPECT_DOUBLE_EQ(out->rankEndUs[3], 1.5);
  EXPECT_EQ(out->messages, 2u);
}

// A group's local steps share the rank's HBM (2 GB/s): they run one after another, in step
// order, as the executor runs them. A copy of 1000 B (two passes: 1 µs), a copy in place
// (nothing moves), a reduction of 1000 B (three passes: 1.5 µs): the group is over at 2.5 µs,
// as the same steps in three groups are; each at the whole rate at once ended it at 1.5.
TEST(SimEngine, LocalStepsOfAGroupShareHbm) {
  Simulator sim = simulatorFor(testing::fourChipsOnASwitch(), 1);
  auto at = [](uintptr_t k) { return reinterpret_cast<std::byte*>(k << 16); };
  const std::vector<Step> steps = {
      Step{.prim = Primitive::kCopy, .src = at(1), .dst = at(2), .count = 1000},
      Step{.prim = Primitive::kCopy, .src = at(3), .dst = at(3), .count = 1000},
      Step{.prim = Primitive::kReduce, .count = 1000}};
  Recorder rec;
  auto grouped = sim.schedules([&](int) { return bytesSchedule(1, {steps}); }, &rec);
  ASSERT_TRUE(grouped) << grouped.status().message();
  EXPECT_DOUBLE_EQ(grouped->timeUs, 2.5);
  ASSERT_EQ(rec.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(rec.steps[0].endUs, 1);
  EXPECT_DOUBLE_EQ(rec.steps[1].endUs, 1);
  EXPECT_DOUBLE_EQ(rec.steps[2].endUs, 2.5);
  auto apart = sim.schedules([&](int) {
    return bytesSchedule(1, {{steps[0]}, {steps[1]}, {steps[2]}});
  });
  ASSERT_TRUE(apart) << apart.status().message();
  EXPECT_DOUBLE_EQ(apart->timeUs, 2.5);
}

}  // namespace
}  // namespace trnccl::sim
