// The calibration's per-size step figure (calibrate/step_cost.h fastModeMedian): a slow mode in
// some repetitions of the step program does not move it; without one it is the plain median.
#include "calibrate/step_cost.h"

#include <gtest/gtest.h>

namespace trnccl::calibrate {
namespace {

TEST(FastModeMedian, RepetitionsInASlowModeAreLeftOut) {
  // Like the lead's session-17 calibration at 64 KiB, 4 ranks: most repetitions ~70 us, a few
  // ~12 (the plain median, 68.0, is the slow mode's).
  EXPECT_DOUBLE_EQ(fastModeMedian({69.1, 12.1, 73.3, 11.8, 68.0, 12.5, 70.2}), 12.1);
  EXPECT_DOUBLE_EQ(fastModeMedian({12.0, 30.0, 13.0}), 12.5);
}

TEST(FastModeMedian, WithoutASlowModeItIsTheMedian) {
  EXPECT_DOUBLE_EQ(fastModeMedian({1.6, 1.4, 2.6, 1.5, 1.7}), 1.6);
  EXPECT_DOUBLE_EQ(fastModeMedian({10.0, 19.9}), 14.95);  // within twice the fastest: both kept
  EXPECT_DOUBLE_EQ(fastModeMedian({5.0}), 5.0);
  EXPECT_DOUBLE_EQ(fastModeMedian({}), 0.0);
}

TEST(FastModeMedian, NoPositiveFastestKeepsEveryRepetition) {
  // Small steps are differences of two times and can come out at or below 0.
  EXPECT_DOUBLE_EQ(fastModeMedian({-0.1, 0.3, 0.2}), 0.2);
  EXPECT_DOUBLE_EQ(fastModeMedian({0.0, 0.4, 0.5, 9.0}), 0.45);
}

}  // namespace
}  // namespace trnccl::calibrate
