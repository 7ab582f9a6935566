// trncclGroupSimulateEnd: a group ends without running, and reports the time trnccl-sim's model
// gives its calls on the communicators' modelled topology.
#include "sim/simulate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "api/handle.h"
#include "support/ranks.h"

namespace trnccl::testing {
namespace {

constexpr size_t kCount = 1 << 20;

// What the simulator says of one all-reduce of kCount floats on `comm`'s view (the same model).
double modelledAllReduceUs(trncclComm_t comm) {
  const comm::Communicator& c = *comm->impl;
  sim::EngineOptions options;
  options.eagerBytes = 4 * c.sliceBytes();
  auto simulator = sim::Simulator::create(c.topology(), options);
  EXPECT_TRUE(simulator) << simulator.status().message();
  algorithms::CollArgs args;
  args.count = kCount;
  args.sliceBytes = c.sliceBytes();
  auto run = simulator->collective(args);
  EXPECT_TRUE(run) << run.status().message();
  return run ? run->outcome.timeUs : -1;
}

TEST(GroupSimulate, EstimatesWithoutRunning) {
  Ranks& ranks = Ranks::get(4);
  ranks.run([&](int r) {
    std::vector<float> send(kCount, 1.0f), recv(kCount, -7.0f);
    trncclComm_t comm = ranks.comm(r);
    auto allReduce = [&] {
      return trncclAllReduce(send.data(), recv.data(), kCount, trncclFloat, trncclSum, comm,
                             ranks.stream(r));
    };
    trncclSimInfo_t one = TRNCCL_SIM_INFO_INITIALIZER;
    EXPECT_TRUE(std::isnan(one.estimatedTime));
    ASSERT_EQ(trncclGroupStart(), trncclSuccess);
    ASSERT_EQ(allReduce(), trncclSuccess);
    ASSERT_EQ(trncclGroupSimulateEnd(&one), trncclSuccess) << trncclGetLastError(nullptr);
    EXPECT_GT(one.estimatedTime, 0);
    EXPECT_NEAR(one.estimatedTime, modelledAllReduceUs(comm), 1e-3 * one.estimatedTime);

    trncclSimInfo_t two = TRNCCL_SIM_INFO_INITIALIZER;
    ASSERT_EQ(trncclGroupStart(), trncclSuccess);
    ASSERT_EQ(allReduce(), trncclSuccess);
    ASSERT_EQ(allReduce(), trncclSuccess);
    ASSERT_EQ(trncclGroupSimulateEnd(&two), trncclSuccess) << trncclGetLastError(nullptr);
    EXPECT_NEAR(two.estimatedTime, 2 * one.estimatedTime, 1e-3 * one.estimatedTime);

    // Nothing ran: the receive buffer is untouched, and the communicators are still in step.
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    EXPECT_EQ(recv.front(), -7.0f);
    EXPECT_EQ(recv.back(), -7.0f);
    ASSERT_EQ(allReduce(), trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess);
    EXPECT_EQ(recv.front(), 4.0f);
  });
}

// A group's sends and receives: the peer's matching side is assumed, and a larger message
// takes longer.
TEST(GroupSimulate, SendsAndReceives) {
  Ranks& ranks = Ranks::get(2);
  ranks.run([&](int r) {
    std::vector<float> buf(kCount, 0.0f);
    auto simulate = [&](size_t count) {
      trncclSimInfo_t info = TRNCCL_SIM_INFO_INITIALIZER;
      EXPECT_EQ(trncclGroupStart(), trncclSuccess);
      EXPECT_EQ(trncclSend(buf.data(), count, trncclFloat, 1 - r, ranks.comm(r), ranks.stream(r)),
                trncclSuccess);
      EXPECT_EQ(trncclRecv(buf.data(), count, trncclFloat, 1 - r, ranks.comm(r), ranks.stream(r)),
                trncclSuccess);
      EXPECT_EQ(trncclGroupSimulateEnd(&info), trncclSuccess) << trncclGetLastError(nullptr);
      return info.estimatedTime;
    };
    const float small = simulate(1024), large = simulate(kCount);
    EXPECT_GT(small, 0);
    EXPECT_GT(large, 2 * small);
  });
}

TEST(GroupSimulate, BadInput) {
  EXPECT_EQ(trncclGroupSimulateEnd(nullptr), trncclInvalidArgument);
  EXPECT_NE(std::string(trncclGetLastError(nullptr)).find("simInfo is NULL"), std::string::npos);
  trncclSimInfo_t junk{};
  ASSERT_EQ(trncclGroupStart(), trncclSuccess);
  EXPECT_EQ(trncclGroupSimulateEnd(&junk), trncclInvalidArgument);
  EXPECT_NE(std::string(trncclGetLastError(nullptr)).find("TRNCCL_SIM_INFO_INITIALIZER"),
            std::string::npos);
  // The group stayed open; as after any failed call in a group, ending it reports the error.
  EXPECT_EQ(trncclGroupEnd(), trncclInvalidArgument);
  trncclSimInfo_t info = TRNCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(trncclGroupSimulateEnd(&info), trncclInvalidUsage);  // no group to end
  // An inner group just ends; the outer one simulates (nothing: 0 µs).
  ASSERT_EQ(trncclGroupStart(), trncclSuccess);
  ASSERT_EQ(trncclGroupStart(), trncclSuccess);
  EXPECT_EQ(trncclGroupSimulateEnd(&info), trncclSuccess);
  EXPECT_TRUE(std::isnan(info.estimatedTime));
  EXPECT_EQ(trncclGroupSimulateEnd(&info), trncclSuccess);
  EXPECT_EQ(info.estimatedTime, 0.0f);
}

}  // namespace
}  // namespace trnccl::testing
