// The engine's event queue (src/sim/event_queue.h): times pop in order, ties in the order the
// engine's results were established with, and peek() names events that are about to pop.
#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace trnccl::sim {
namespace {

// Events at the time last taken pop last pushed first: the simulated times of every schedule
// with ties depend on it, so it is pinned here.
TEST(EventQueue, TiesAtTheCurrentTimePopLastPushedFirst) {
  EventQueue q;
  q.push(0, 1, 0);
  q.push(0, 2, 0);
  q.push(5, 3, 0);
  EXPECT_EQ(q.pop().id, 2u);
  q.push(0, 4, 0);  // at the current time: next
  EXPECT_EQ(q.pop().id, 4u);
  EXPECT_EQ(q.pop().id, 1u);
  const Event e = q.pop();
  EXPECT_EQ(e.id, 3u);
  EXPECT_EQ(e.time(), 5);
  EXPECT_TRUE(q.empty());
}

// A random run like the engine's (each event may push later ones): every event pops once, in
// time order.
TEST(EventQueue, PopsEveryEventInTimeOrder) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> delay(0, 40), fanout(0, 3);
  EventQueue q;
  std::map<uint32_t, double> pending;
  uint32_t next = 0;
  for (int i = 0; i < 200; ++i) {
    const double t = delay(rng) * 0.25;
    q.push(t, next, 0);
    pending[next++] = t;
  }
  double last = 0;
  while (!q.empty()) {
    const Event e = q.pop();
    auto it = pending.find(e.id);
    ASSERT_NE(it, pending.end()) << "popped twice or never pushed: " << e.id;
    EXPECT_EQ(e.time(), it->second);
    EXPECT_GE(e.time(), last);
    last = e.time();
    pending.erase(it);
    for (int k = fanout(rng); k > 0 && next < 5000; --k) {
      const double t = last + delay(rng) * 0.25;
      q.push(t, next, 1);
      pending[next++] = t;
    }
  }
  EXPECT_TRUE(pending.empty());
  EXPECT_GT(next, 1000u);
}

// peek(d) names the event d pops after the next among those at the current time; beyond them,
// one of the next time's few; null when the queue is empty.
TEST(EventQueue, PeekNamesEventsAboutToPop) {
  EventQueue q;
  EXPECT_EQ(q.peek(0), nullptr);
  for (uint32_t id = 0; id < 6; ++id) q.push(1, id, 0);
  q.push(2, 10, 0);
  q.push(2, 11, 0);
  EXPECT_EQ(q.pop().id, 5u);  // takes time 1: the others at 1 are known
  std::vector<uint32_t> peeked;
  for (size_t d = 0; d < 5; ++d) peeked.push_back(q.peek(d)->id);
  const Event* beyond = q.peek(7);
  ASSERT_NE(beyond, nullptr);
  EXPECT_TRUE(beyond->id == 10 || beyond->id == 11) << beyond->id;
  for (uint32_t want : peeked) EXPECT_EQ(q.pop().id, want);
  EXPECT_EQ(q.pop().time(), 2);
}

TEST(EventQueue, ClearStartsOver) {
  EventQueue q;
  q.push(3, 1, 0);
  q.push(9, 2, 0);
  EXPECT_EQ(q.pop().id, 1u);
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.peek(0), nullptr);
  q.push(1, 7, 0);  // before the time last taken by the cleared run
  q.push(2, 8, 0);
  EXPECT_EQ(q.pop().time(), 1);
  EXPECT_EQ(q.pop().time(), 2);
}

}  // namespace
}  // namespace trnccl::sim
