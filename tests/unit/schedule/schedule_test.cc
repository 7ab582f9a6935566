// The Schedule container's grouping rule: empty steps are dropped without ending or splitting a
// group, and withNext is the container's to set.
#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

namespace trnccl::schedule {
namespace {

Step sendTo(int peer, size_t count) {
  return Step{.prim = Primitive::kSend, .sendPeer = peer, .count = count};
}

Step recvFrom(int peer, size_t count) {
  return Step{.prim = Primitive::kRecv, .recvPeer = peer, .count = count};
}

// The groups of `s` as lists of peers (send peer, or receive peer), as the executor splits them.
std::vector<std::vector<int>> groups(const Schedule& s) {
  std::vector<std::vector<int>> out(1);
  for (const Step& st : s.steps()) {
    out.back().push_back(st.sendPeer >= 0 ? st.sendPeer : st.recvPeer);
    if (!st.withNext) out.emplace_back();
  }
  out.pop_back();  // the empty group after the last step (or the only one of no steps)
  return out;
}

TEST(ScheduleGroups, GroupOfOneStep) {
  Schedule s;
  s.addGroup({sendTo(1, 4)});
  s.add(recvFrom(2, 4));
  ASSERT_EQ(s.steps().size(), 2u);
  EXPECT_FALSE(s.steps()[0].withNext);
  EXPECT_EQ(groups(s), (std::vector<std::vector<int>>{{1}, {2}}));
}

TEST(ScheduleGroups, EmptyStepsNeverBreakAGroup) {
  Schedule s;
  // Empty first, middle and last: the three others still form one group.
  s.addGroup(
      {sendTo(1, 0), sendTo(2, 8), recvFrom(3, 0), recvFrom(4, 8), sendTo(5, 8), recvFrom(6, 0)});
  s.addGroup({sendTo(7, 8), recvFrom(7, 8)});
  EXPECT_EQ(groups(s), (std::vector<std::vector<int>>{{2, 4, 5}, {7, 7}}));
}

TEST(ScheduleGroups, AllEmptyGroupAddsNothing) {
  Schedule s;
  s.addGroup({sendTo(1, 8), recvFrom(1, 8)});
  s.addGroup({sendTo(2, 0), recvFrom(2, 0)});
  s.addGroup({});
  s.add(sendTo(3, 0));
  s.addGroup({sendTo(4, 8)});
  // The empty groups neither join the first group to the last nor leave a trace.
  EXPECT_EQ(groups(s), (std::vector<std::vector<int>>{{1, 1}, {4}}));
}

TEST(ScheduleGroups, WithNextIsTheContainers) {
  Schedule s;
  Step joined = sendTo(1, 8);
  joined.withNext = true;  // a caller's flag does not join it to the next group
  s.add(joined);
  Step last = recvFrom(2, 8);
  last.withNext = true;
  s.addGroup({sendTo(3, 8), last});
  s.add(sendTo(4, 8));
  EXPECT_EQ(groups(s), (std::vector<std::vector<int>>{{1}, {3, 2}, {4}}));
}

// Scratch is recorded, not allocated: regions are addresses of the schedule's scratch space,
// 64-byte aligned and disjoint, and only ScratchMemory (the executor's) puts memory behind them.
TEST(ScheduleScratch, RecordedNotAllocated) {
  Schedule s;
  std::byte* a = s.allocScratch(100);
  std::byte* b = s.allocScratch(1);
  EXPECT_TRUE(inScratchSpace(a));
  EXPECT_TRUE(inScratchSpace(b));
  EXPECT_EQ(b - a, 128);
  EXPECT_EQ(s.scratchBytes(), 192u);
  // Terabytes of scratch cost a schedule nothing until it runs.
  s.allocScratch(size_t{1} << 42);
  EXPECT_EQ(s.scratchBytes(), 192u + (size_t{1} << 42));
}

TEST(ScheduleScratch, MemoryMapsOnlyTheScratchSpace) {
  Schedule s;
  std::byte* a = s.allocScratch(64);
  std::byte* b = s.allocScratch(64);
  ScratchMemory memory(s.scratchBytes());
  std::byte* ma = memory.map(a);
  std::byte* mb = memory.map(b);
  EXPECT_FALSE(inScratchSpace(ma));
  EXPECT_EQ(mb - ma, 64);
  ma[63] = std::byte{7};  // real, writable memory (ASan would flag anything else)
  mb[0] = std::byte{9};
  EXPECT_EQ(ma[63], std::byte{7});
  int local = 0;
  EXPECT_EQ(memory.map(&local), &local);  // a real buffer is left alone
  EXPECT_EQ(memory.map(static_cast<void*>(nullptr)), nullptr);
}

// The local reduction neither receives nor sends; a duplicated write shows both destinations.
TEST(Primitives, LocalReduceAndDuplicatedWrite) {
  EXPECT_FALSE(receives(Primitive::kReduce));
  EXPECT_FALSE(sends(Primitive::kReduce));
  EXPECT_STREQ(primitiveName(Primitive::kReduce), "reduce");
  Schedule s;
  s.add(Step{
      .prim = Primitive::kRecvCopySend, .recvPeer = 1, .sendPeer = 3, .sendPeer2 = 5, .count = 4});
  EXPECT_NE(s.dump().find("recvCopySend       recv   1 send   3,5 "), std::string::npos)
      << s.dump();
}

// The Layout the executor runs by: groups as the steps' withNext says, each group's distinct
// peers, and each step's message numbers per connection (what goes into its tags); derived
// once, dropped when a step is added, not carried by copies.
TEST(ScheduleLayout, GroupsPeersAndMessageNumbers) {
  Schedule s;
  s.addGroup({sendTo(1, 4), recvFrom(1, 4), recvFrom(2, 4)});
  s.add(Step{.prim = Primitive::kRecvReduceSend,
             .recvPeer = 2,
             .sendPeer = 1,
             .sendPeer2 = 3,
             .count = 4});
  s.add(Step{.prim = Primitive::kCopy, .count = 4});
  s.add(recvFrom(1, 4));
  const Layout& l = s.layout();
  ASSERT_EQ(l.groups.size(), 4u);
  EXPECT_EQ(l.groups[0].first, 0u);
  EXPECT_EQ(l.groups[0].last, 2u);
  EXPECT_EQ(l.groups[1].first, 3u);
  EXPECT_EQ(l.groups[1].last, 3u);
  using Peers = std::vector<int>;
  auto peers = [&](size_t g) {
    std::span<const int> p = l.peersOf(l.groups[g]);
    return Peers(p.begin(), p.end());
  };
  EXPECT_EQ(peers(0), (Peers{1, 2}));
  EXPECT_EQ(peers(1), (Peers{2, 1, 3}));
  EXPECT_EQ(peers(2), Peers{});
  EXPECT_EQ(peers(3), Peers{1});
  ASSERT_EQ(l.messages.size(), 6u);
  EXPECT_EQ(l.messages[0].send, 0u);   // first to 1
  EXPECT_EQ(l.messages[1].recv, 0u);   // first from 1
  EXPECT_EQ(l.messages[2].recv, 0u);   // first from 2
  EXPECT_EQ(l.messages[3].recv, 1u);   // second from 2
  EXPECT_EQ(l.messages[3].send, 1u);   // second to 1
  EXPECT_EQ(l.messages[3].send2, 0u);  // first to 3
  EXPECT_EQ(l.messages[5].recv, 1u);   // second from 1
  EXPECT_EQ(&s.layout(), &l);          // derived once

  Schedule copy = s;
  EXPECT_NE(&copy.layout(), &l);
  EXPECT_EQ(copy.layout().groups.size(), 4u);
  s.add(recvFrom(1, 4));
  EXPECT_EQ(s.layout().groups.size(), 5u);
  EXPECT_EQ(s.layout().messages[6].recv, 2u);
}

// What the executor resolves once per schedule besides the groups (issue 14, session 12): the
// distinct peers each group sends to (whose sends it checks after the group), whether a step's
// addresses are in the scratch space, whether it only copies what arrives. Re-derived when a
// step is added; a copy derives its own.
TEST(ScheduleLayout, StepRunsAndSendersDerivedOnceAndAgainAfterAdd) {
  Schedule s;
  std::byte* scratch = s.allocScratch(64);
  float local[4] = {};
  s.addGroup({sendTo(1, 4),
              Step{.prim = Primitive::kRecvReduceSend,
                   .recvPeer = 2,
                   .sendPeer = 1,
                   .sendPeer2 = 3,
                   .src = local,
                   .dst = scratch,
                   .count = 4},
              recvFrom(2, 4)});
  s.add(Step{.prim = Primitive::kRecvCopySend, .recvPeer = 1, .sendPeer = 2, .count = 4});
  const Layout& l = s.layout();
  using Peers = std::vector<int>;
  auto senders = [](const Layout& l, size_t g) {
    std::span<const int> p = l.sendersOf(l.groups[g]);
    return Peers(p.begin(), p.end());
  };
  ASSERT_EQ(l.groups.size(), 2u);
  EXPECT_EQ(senders(l, 0), (Peers{1, 3}));
  EXPECT_EQ(senders(l, 1), Peers{2});
  ASSERT_EQ(l.runs.size(), 4u);
  EXPECT_FALSE(l.runs[1].mapSrc);
  EXPECT_TRUE(l.runs[1].mapDst);
  EXPECT_FALSE(l.runs[1].copies);
  EXPECT_TRUE(l.runs[2].copies);
  EXPECT_TRUE(l.runs[3].copies);
  EXPECT_FALSE(l.runs[0].mapSrc || l.runs[0].mapDst);

  s.add(Step{.prim = Primitive::kSend, .sendPeer = 4, .src = scratch, .count = 4});
  const Layout& again = s.layout();
  ASSERT_EQ(again.groups.size(), 3u);
  EXPECT_EQ(senders(again, 2), Peers{4});
  ASSERT_EQ(again.runs.size(), 5u);
  EXPECT_TRUE(again.runs[4].mapSrc);
  Schedule copy = s;
  EXPECT_EQ(senders(copy.layout(), 2), Peers{4});
  EXPECT_NE(&copy.layout(), &again);
}

}  // namespace
}  // namespace trnccl::schedule
