// The engine's rules for messages read in place (a link's in_place_bytes: this machine's shm
// transport, docs/SIMULATOR.md "This machine", fifteenth session) on cases small enough to time
// by hand. Each expected time is derived in the comment above it.
#include <gtest/gtest.h>

#include <tuple>

#include "sim_test_util.h"

namespace trnccl::sim {
namespace {

using schedule::Primitive;
using schedule::Step;
using testing::bytesSchedule;
using testing::recvFrom;
using testing::sendTo;
using testing::simulatorFor;

// A link whose messages from 2000 B on are read in place (the `host` description of the shm
// transport: one copy instead of two) charges such a message half its bytes. On the switch's
// 1 GB/s ports (1 µs through it), 1999 B take 1.999 µs and land at 2.999; 2000 B take 1 µs and
// land at 2, and their sender is done at once: it handed over a descriptor (fifteenth session;
// it was done at 1, once its port had carried the bytes).
TEST(SimEngine, InPlaceMessagesCostHalfTheirBytes) {
  topology::Topology t = testing::fourChipsOnASwitch();
  t.fabric.link.inPlaceBytes = 2000;
  for (const auto& [bytes, sent, landed] : {std::tuple{1999, 1.999, 2.999}, {2000, 0.0, 2.0}}) {
    Simulator sim = simulatorFor(t, 2);
    auto out = sim.schedules([bytes = static_cast<size_t>(bytes)](int r) {
      return r == 0 ? bytesSchedule(2, {{sendTo(1, bytes)}})
                    : bytesSchedule(2, {{recvFrom(0, bytes)}});
    });
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_DOUBLE_EQ(out->rankEndUs[0], sent) << bytes << " B";
    EXPECT_DOUBLE_EQ(out->rankEndUs[1], landed) << bytes << " B";
  }
}

// A message read in place moves as its receiver reads it, in its receive (docs/SIMULATOR.md,
// fifteenth session): rank 0 sends 2000 B (read in place from 2000 B on, 1 µs on the 1 GB/s
// ports, 1 µs through the switch) to rank 1, which first copies 2000 B (2 µs at HBM 2 GB/s) and
// only then receives. Rank 0 is done at 0 (a descriptor); the transfer runs 2..3 and lands at 4.
// (Before, the ports carried it at 0..1 whatever the receiver did: rank 0 done at 1, rank 1 at 2.)
// A reduction of a message read in place is the transfer's one pass: rank 1 reduces the 2000 B
// at a third of HBM (667 B/µs, 3 µs) from their arrival at 1, done at max(2, 1 + 3) = 4 (a
// reduction after the transfer would end at 2 + 3 = 5).
TEST(SimEngine, InPlaceReadsHappenInTheReceive) {
  topology::Topology t = testing::fourChipsOnASwitch();
  t.fabric.link.inPlaceBytes = 2000;
  auto at = [](uintptr_t k) { return reinterpret_cast<std::byte*>(k << 16); };
  const auto run = [&](const Step& receive, bool copyFirst) {
    Simulator sim = simulatorFor(t, 2);
    auto out = sim.schedules([&](int r) {
      if (r == 0) return bytesSchedule(2, {{sendTo(1, 2000)}});
      const Step copy{.prim = Primitive::kCopy, .src = at(3), .dst = at(4), .count = 2000};
      return copyFirst ? bytesSchedule(2, {{copy}, {receive}}) : bytesSchedule(2, {{receive}});
    });
    EXPECT_TRUE(out) << out.status().message();
    return out ? std::pair{out->rankEndUs[0], out->rankEndUs[1]} : std::pair{-1.0, -1.0};
  };
  EXPECT_EQ(run(recvFrom(0, 2000), true), (std::pair{0.0, 4.0}));
  const Step reduce{
      .prim = Primitive::kRecvReduceCopy, .recvPeer = 0, .src = at(1), .dst = at(2), .count = 2000};
  EXPECT_EQ(run(reduce, false), (std::pair{0.0, 4.0}));
}

// Reading in place bytes another core has just written costs at least the device's
// inPlaceFreshUs (5 µs here); what the caller passed in does not (the benchmark's send buffer).
// Rank 0 sends 2000 B (in place) to rank 1, which forwards them to rank 2 (a recvCopySend): the
// first is the caller's, lands at 2 (1 µs on the ports, 1 through the switch); the forward is
// fresh: issued at 2, read by rank 2 from 2 for at least 5 µs, lands at 8 (without the floor at
// 2 + 1 + 1 = 4). A plain send of a buffer an earlier step of the call wrote is fresh too: rank
// 0 copies 1000 B into the first half of what it then sends (1 µs); read from 1, it lands at 7,
// and at 3 when it sends another buffer.
TEST(SimEngine, FreshBytesReadInPlaceCostAtLeastTheirFloor) {
  topology::Topology t = testing::fourChipsOnASwitch();
  t.fabric.link.inPlaceBytes = 2000;
  t.device.inPlaceFreshUs = 5;
  auto at = [](uintptr_t k) { return reinterpret_cast<std::byte*>(k << 16); };
  {
    Simulator sim = simulatorFor(t, 3);
    auto out = sim.schedules([&](int r) {
      if (r == 0) return bytesSchedule(3, {{sendTo(1, 2000)}});
      if (r == 2) return bytesSchedule(3, {{recvFrom(1, 2000)}});
      return bytesSchedule(3, {{Step{.prim = Primitive::kRecvCopySend,
                                     .recvPeer = 0,
                                     .sendPeer = 2,
                                     .src = at(1),
                                     .dst = at(1),
                                     .count = 2000}}});
    });
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_DOUBLE_EQ(out->rankEndUs[1], 2);
    EXPECT_DOUBLE_EQ(out->rankEndUs[2], 8);
  }
  for (const auto& [from, landed] : {std::pair{2, 7.0}, {5, 3.0}}) {
    Simulator sim = simulatorFor(t, 2);
    auto out = sim.schedules([&, from = from](int r) {
      if (r == 1) return bytesSchedule(2, {{recvFrom(0, 2000)}});
      return bytesSchedule(
          2, {{Step{.prim = Primitive::kCopy, .src = at(1), .dst = at(2), .count = 1000}},
              {Step{.prim = Primitive::kSend, .sendPeer = 1, .src = at(from), .count = 2000}}});
    });
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_DOUBLE_EQ(out->rankEndUs[1], landed) << "sent from " << from;
  }
}

// A reduction of a message that came through the FIFO (below in_place_bytes) reads the FIFO
// where the sender copied it (the executor's consumer, schedule/step_run.h): the receiver's copy
// out, half the link's time, is not made (docs/SIMULATOR.md, seventeenth session). Rank 0 sends
// 1000 B (through the FIFO: 1 µs on the 1 GB/s ports, both copies; 1 µs through the switch) to
// rank 1, which reduces them (a third of HBM's 2 GB/s: 1.5 µs): from the sender's copy, half the
// port's microsecond, they are there at 0.5 + 1 = 1.5 and reduced at 3.0 (before: at 2, then
// 3.5). A plain receive still copies them out: 2. A link that reads nothing in place (every
// built-in) keeps the old rule: 3.5.
TEST(SimEngine, FifoReductionsReadTheFifo) {
  auto at = [](uintptr_t k) { return reinterpret_cast<std::byte*>(k << 16); };
  const Step reduce{
      .prim = Primitive::kRecvReduceCopy, .recvPeer = 0, .src = at(1), .dst = at(2), .count = 1000};
  for (const auto& [inPlace, receive, landed] : {std::tuple{uint64_t{2000}, reduce, 3.0},
                                                 {uint64_t{2000}, recvFrom(0, 1000), 2.0},
                                                 {uint64_t{0}, reduce, 3.5}}) {
    topology::Topology t = testing::fourChipsOnASwitch();
    t.fabric.link.inPlaceBytes = inPlace;
    Simulator sim = simulatorFor(t, 2);
    auto out = sim.schedules([&, receive = receive](int r) {
      return r == 0 ? bytesSchedule(2, {{sendTo(1, 1000)}}) : bytesSchedule(2, {{receive}});
    });
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_DOUBLE_EQ(out->rankEndUs[1], landed) << "in place from " << inPlace;
  }
}

}  // namespace
}  // namespace trnccl::sim
