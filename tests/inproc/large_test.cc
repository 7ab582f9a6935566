// A message of more than 2^31 bytes: counts and offsets stay 64-bit through the API, the
// planner, the schedule and the transports.
#include <gtest/gtest.h>

#include <cstdint>

#include "support/ranks.h"

namespace trnccl::testing {
namespace {

TEST(Large, AllReduceOfMoreThanTwoGiB) {
  const size_t count = (size_t{1} << 31) + 5;  // int8: 2 GiB + 5 bytes
  Ranks& ranks = Ranks::get(2);
  size_t wrong[2] = {0, 0};
  ranks.run([&](int r) {
    void* buf = nullptr;
    ASSERT_EQ(trnrtMalloc(&buf, count), trnrtSuccess) << trnrtGetLastErrorMessage();
    auto* p = static_cast<int8_t*>(buf);
    for (size_t i = 0; i < count; ++i) p[i] = static_cast<int8_t>(i % 7 + r);
    ASSERT_EQ(
        trncclAllReduce(buf, buf, count, trncclInt8, trncclSum, ranks.comm(r), ranks.stream(r)),
        trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess) << trnrtGetLastErrorMessage();
    for (size_t i = 0; i < count; ++i) wrong[r] += p[i] != static_cast<int8_t>(2 * (i % 7) + 1);
    trnrtFree(buf);
  });
  EXPECT_EQ(wrong[0], 0u);
  EXPECT_EQ(wrong[1], 0u);
}

}  // namespace
}  // namespace trnccl::testing
