// A Program (src/sim/program.h): every rank's schedule compiled into steps and connections, and
// the tables one Program leaves to the next of the same fabric (ProgramTables).
#include "sim/program.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "sim_test_util.h"

namespace trnccl::sim {
namespace {

using schedule::Primitive;
using schedule::Step;
using testing::bytesSchedule;
using testing::recvFrom;
using testing::sendTo;

// Four ranks on a switch: every pair's route is port up, then port down.
class ProgramTest : public ::testing::Test {
 protected:
  Simulator sim = testing::simulatorFor(testing::fourChipsOnASwitch(), 4);
  const Fabric& fabric = sim.fabric();
};

TEST_F(ProgramTest, StepsAreCompact) {
  Program p(fabric);
  ASSERT_TRUE(p.add(0, bytesSchedule(4, {{sendTo(1, 1000), recvFrom(2, 7)}})));
  ASSERT_EQ(p.steps().size(), 2u);
  const SimStep& send = p.steps()[0];
  EXPECT_EQ(send.prim(), Primitive::kSend);
  EXPECT_EQ(send.bytes, 1000u);
  EXPECT_FALSE(send.has(SimStep::kLastOfGroup));
  EXPECT_EQ(send.recvConn, -1);
  const SimStep& recv = p.steps()[1];
  EXPECT_EQ(recv.prim(), Primitive::kRecv);
  EXPECT_EQ(recv.bytes, 7u);
  EXPECT_TRUE(recv.has(SimStep::kLastOfGroup));
  EXPECT_EQ(p.connections()[static_cast<size_t>(send.sendConn)].to, 1);
  EXPECT_EQ(p.connections()[static_cast<size_t>(recv.recvConn)].from, 2);
  EXPECT_EQ(p.secondConn(0), -1);
}

TEST_F(ProgramTest, ADuplicatedWritesSecondDestinationIsLookedUp) {
  Program p(fabric);
  Step dup{.prim = Primitive::kSend, .sendPeer = 1, .sendPeer2 = 2, .count = 8};
  ASSERT_TRUE(p.add(1, bytesSchedule(4, {{recvFrom(0, 8)}})));
  ASSERT_TRUE(p.add(0, bytesSchedule(4, {{sendTo(3, 8)}, {dup}})));
  const uint32_t step = p.first(0) + 1;
  ASSERT_TRUE(p.steps()[step].has(SimStep::kSecondSend));
  const int32_t c2 = p.secondConn(step);
  ASSERT_GE(c2, 0);
  EXPECT_EQ(p.connections()[static_cast<size_t>(c2)].from, 0);
  EXPECT_EQ(p.connections()[static_cast<size_t>(c2)].to, 2);
  EXPECT_EQ(p.secondConn(step - 1), -1);
  EXPECT_EQ(p.sends(), 3u);
}

TEST_F(ProgramTest, AStepTooLargeIsRefused) {
  Program p(fabric);
  Status s = p.add(0, bytesSchedule(4, {{sendTo(1, size_t{1} << 48)}}));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("exceed"), std::string::npos) << s.message();
}

// A later Program on the same tables numbers its own connections from 0, in the order its steps
// name them, and finds each pair's route from the tables rather than anew.
TEST_F(ProgramTest, TablesCarryRoutesNotConnections) {
  ProgramTables tables;
  {
    Program p(fabric, &tables);
    ASSERT_TRUE(p.add(0, bytesSchedule(4, {{sendTo(1, 8), sendTo(2, 8), sendTo(3, 8)}})));
    EXPECT_EQ(p.connections().size(), 3u);
  }
  const size_t routes = tables.routes.size();
  EXPECT_EQ(routes, 3u);  // port 0 up, then port 1, 2 or 3 down
  Program q(fabric, &tables);
  ASSERT_TRUE(q.add(0, bytesSchedule(4, {{sendTo(3, 8)}})));
  ASSERT_TRUE(q.add(2, bytesSchedule(4, {{sendTo(1, 8)}})));
  ASSERT_EQ(q.connections().size(), 2u);
  EXPECT_EQ(q.steps()[0].sendConn, 0);
  EXPECT_EQ(q.connections()[0].to, 3);
  EXPECT_EQ(q.steps()[1].sendConn, 1);
  EXPECT_EQ(q.connections()[1].from, 2);
  EXPECT_EQ(tables.routes.size(), routes + 1) << "only 2 -> 1 is new";
  // The route a connection names is its own pair's, whether found now or by the first Program.
  for (const Connection& c : q.connections()) {
    auto want = fabric.route(c.from, c.to);
    ASSERT_TRUE(want);
    const Route& got = q.routes()[c.route];
    ASSERT_EQ(got.count, want->count);
    for (int h = 0; h < got.count; ++h) EXPECT_EQ(got.hops[h], want->hops[h]);
  }
}

// The stamp that tells this Program's connections from an earlier one's wraps around safely.
TEST_F(ProgramTest, TheStampWrapsAround) {
  ProgramTables tables;
  {
    Program p(fabric, &tables);
    ASSERT_TRUE(p.add(0, bytesSchedule(4, {{sendTo(1, 8)}})));
  }
  tables.stamp = UINT32_MAX;  // the next Program's would be 0, which every new pair has
  Program q(fabric, &tables);
  ASSERT_TRUE(q.add(0, bytesSchedule(4, {{sendTo(2, 8), sendTo(1, 8)}})));
  ASSERT_EQ(q.connections().size(), 2u) << "0 -> 1 is this Program's too, numbered anew";
  EXPECT_EQ(q.connections()[1].to, 1);
}

// A Simulator's calls share its tables: a sweep gives what separate simulators give.
TEST_F(ProgramTest, CallsOnSharedTablesMatchFreshOnes) {
  auto call = [](const Simulator& s, size_t count) {
    algorithms::CollArgs args;
    args.count = count;
    auto run = s.collective(args);
    EXPECT_TRUE(run) << run.status().message();
    return run ? run->outcome.timeUs : -1.0;
  };
  std::vector<double> shared;
  for (size_t count : {size_t{1000}, size_t{7}, size_t{100'000}})
    shared.push_back(call(sim, count));
  std::vector<double> fresh;
  for (size_t count : {size_t{1000}, size_t{7}, size_t{100'000}}) {
    fresh.push_back(call(testing::simulatorFor(testing::fourChipsOnASwitch(), 4), count));
  }
  EXPECT_EQ(shared, fresh);
}

}  // namespace
}  // namespace trnccl::sim
