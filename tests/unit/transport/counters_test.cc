// Counters<Event> (transports/core/counters.h) and the harness's CounterDelta: per-process
// counts that tests read as differences.
#include "transports/core/counters.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "support/transport_harness.h"

namespace trnccl::transport::test {
namespace {

enum class Event { kSent, kLive, kCount };

TEST(Counters, OneInstancePerEventTypeCountingFromAllThreads) {
  CounterDelta<Event> delta;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) Counters<Event>::process().add(Event::kSent);
    });
  }
  for (auto& thread : threads) thread.join();
  Counters<Event>::process().add(Event::kLive, 3);
  Counters<Event>::process().add(Event::kLive, -1);
  EXPECT_EQ(delta.get(Event::kSent), 4000);
  EXPECT_EQ(delta.get(Event::kLive), 2);
  std::array<int64_t, 2> now = Counters<Event>::process().snapshot();
  EXPECT_EQ(now[0], Counters<Event>::process().get(Event::kSent));
  EXPECT_EQ(now[1], Counters<Event>::process().get(Event::kLive));
}

}  // namespace
}  // namespace trnccl::transport::test
