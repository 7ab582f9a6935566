// The calibration's per-size step figure (calibrate/step_cost.h fastModeMedian): a slow mode in
// some repetitions of the step program does not move it; without one it is the plain median.
// The judgement of a whole run of the step program against the copy rate, and its repetition
// (calibrate/step_check.h): a slow-mode run is rejected, a normal one kept, at most 3 runs.
#include "calibrate/step_cost.h"

#include <gtest/gtest.h>

#include "calibrate/step_check.h"

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

// A fit with the FIFO's slope and the least round read in place as a run gave them.
StepFit fitOf(double usPerKiB, double inPlaceUs) {
  StepFit f;
  f.usPerKiB = usPerKiB;
  f.inPlaceUs = inPlaceUs;
  return f;
}

constexpr size_t kZeroCopy = 32768;

TEST(JudgeStep, ASlowModeRunIsRejected) {
  // The lead's 2-rank calibration lead1 (session 17): 0.5569 us/KiB, 18.45 us in place, its
  // 64 KiB copy band 51.96 GB/s: 14.1x and 29.3x.
  const StepVerdict v = judgeStep(fitOf(0.5569, 18.45), 51.96, kZeroCopy);
  EXPECT_FALSE(v.consistent);
  EXPECT_NEAR(v.slopeRatio, 14.1, 0.05);
  EXPECT_NEAR(v.inPlaceRatio, 29.3, 0.05);
  EXPECT_NE(v.why.find("FIFO"), std::string::npos);
  EXPECT_NE(v.why.find("in place"), std::string::npos);
  // The 4-rank slow mode (lead0): 1.0542 us/KiB, 38.74 us, band 24.79 GB/s.
  EXPECT_FALSE(judgeStep(fitOf(1.0542, 38.74), 24.79, kZeroCopy).consistent);
  // Only one of the two out of bounds is enough.
  EXPECT_FALSE(judgeStep(fitOf(0.1037, 18.45), 52.35, kZeroCopy).consistent);
  EXPECT_FALSE(judgeStep(fitOf(0.5569, 4.94), 52.35, kZeroCopy).consistent);
}

TEST(JudgeStep, ANormalRunIsKept) {
  // Session 17's run 1: 2 ranks 0.1037 us/KiB, 4.94 us, 52.35 GB/s (2.7x, 7.9x); 4 ranks
  // 0.1366, 11.07, 25.09 (1.7x, 8.5x).
  const StepVerdict two = judgeStep(fitOf(0.1037, 4.94), 52.35, kZeroCopy);
  EXPECT_TRUE(two.consistent);
  EXPECT_TRUE(two.why.empty());
  EXPECT_NEAR(two.slopeRatio, 2.7, 0.05);
  EXPECT_LE(two.excess(), 1.0);
  EXPECT_TRUE(judgeStep(fitOf(0.1366, 11.07), 25.09, kZeroCopy).consistent);
  // No copy rate: nothing to judge against, not consistent.
  EXPECT_FALSE(judgeStep(fitOf(0.1037, 4.94), 0, kZeroCopy).consistent);
}

// A measure that hands out `fits` in turn and counts its calls.
struct Runs {
  std::vector<StepFit> fits;
  int calls = 0;
  bool operator()(StepFit& f, std::string&) {
    f = fits[static_cast<size_t>(calls++) % fits.size()];
    return true;
  }
};

StepVerdict judged(const StepFit& f) { return judgeStep(f, 52.0, kZeroCopy); }

TEST(ChooseStep, ANormalFirstRunIsKeptAlone) {
  Runs runs{{fitOf(0.11, 5.0)}};
  StepChoice c;
  std::string error;
  ASSERT_TRUE(chooseStep(kStepAttempts, std::ref(runs), judged, c, error));
  EXPECT_EQ(runs.calls, 1);
  EXPECT_EQ(c.kept, 1);
  EXPECT_TRUE(c.consistent());
  EXPECT_EQ(describeChoice(c), "attempt 1 of 1 kept");
}

TEST(ChooseStep, ASlowRunIsRunAgainAndTheNormalOneKept) {
  Runs runs{{fitOf(0.55, 18.5), fitOf(0.11, 5.0)}};
  StepChoice c;
  std::string error;
  ASSERT_TRUE(chooseStep(kStepAttempts, std::ref(runs), judged, c, error));
  EXPECT_EQ(runs.calls, 2);
  EXPECT_EQ(c.kept, 2);
  EXPECT_TRUE(c.consistent());
  EXPECT_DOUBLE_EQ(c.fit.usPerKiB, 0.11);
  EXPECT_EQ(describeChoice(c).rfind("attempt 2 of 2 kept; attempt 1: FIFO", 0), 0u);
}

TEST(ChooseStep, AtMostTheBoundOfRunsThenTheLeastSlow) {
  Runs runs{{fitOf(0.55, 18.5), fitOf(0.40, 15.0), fitOf(1.05, 38.7), fitOf(0.11, 5.0)}};
  StepChoice c;
  std::string error;
  ASSERT_TRUE(chooseStep(kStepAttempts, std::ref(runs), judged, c, error));
  EXPECT_EQ(runs.calls, kStepAttempts);  // the fourth, normal run is never made
  EXPECT_EQ(kStepAttempts, 3);
  EXPECT_FALSE(c.consistent());
  EXPECT_EQ(c.kept, 2);  // 0.40 us/KiB: the least out of bounds
  EXPECT_DOUBLE_EQ(c.fit.usPerKiB, 0.40);
  ASSERT_EQ(c.verdicts.size(), 3u);
  EXPECT_NE(describeChoice(c).find("none was consistent"), std::string::npos);
}

TEST(ChooseStep, AFailedRunIsAnError) {
  StepChoice c;
  std::string error;
  const auto failing = [](StepFit&, std::string& e) {
    e = "a rank failed";
    return false;
  };
  EXPECT_FALSE(chooseStep(kStepAttempts, failing, judged, c, error));
  EXPECT_EQ(error, "a rank failed");
}

}  // namespace
}  // namespace trnccl::calibrate
