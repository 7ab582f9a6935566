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

// A fit with the FIFO's slope, the 32 KiB round read in place, and the step program's copies of
// 16 KiB (the largest FIFO size) and 32 KiB (the least read in place) alone, as a run gave them.
StepFit fitOf(double usPerKiB, double inPlaceUs, double copy16k, double copy32k) {
  StepFit f;
  f.usPerKiB = usPerKiB;
  f.inPlaceUs = inPlaceUs;
  f.times = {{8, 0.5, 0, 0}, {16384, 2.3, 0, 0}, {32768, inPlaceUs, 0, 0}, {65536, 9.0, 0, 0}};
  f.copyUs = {0.05, copy16k, copy32k, 1.4};
  return f;
}

constexpr size_t kZeroCopy = 32768;

TEST(JudgeStep, ASlowModeRunIsRejected) {
  // 2 ranks in the slow mode (the eighteenth session's probe, 14:20:19): 16 KiB steps 9.4 us,
  // 0.52 us/KiB, 32 KiB 18.0 us; its copies 0.230 and 0.622 us: 18.1x and 28.9x.
  const StepVerdict v = judgeStep(fitOf(0.52, 18.0, 0.230, 0.622), kZeroCopy);
  EXPECT_FALSE(v.consistent);
  EXPECT_NEAR(v.slopeRatio, 18.09, 0.01);
  EXPECT_NEAR(v.inPlaceRatio, 28.94, 0.01);
  EXPECT_NE(v.why.find("FIFO"), std::string::npos);
  EXPECT_NE(v.why.find("32768 B in place"), std::string::npos);
  // 4 ranks (14:20:31): 1.0 us/KiB, 38.2 us; copies 0.393 and 0.868 us.
  EXPECT_FALSE(judgeStep(fitOf(1.0, 38.2, 0.393, 0.868), kZeroCopy).consistent);
  // Only one of the two out of bounds is enough.
  EXPECT_FALSE(judgeStep(fitOf(0.11, 18.0, 0.230, 0.622), kZeroCopy).consistent);
  EXPECT_FALSE(judgeStep(fitOf(0.52, 5.2, 0.230, 0.622), kZeroCopy).consistent);
}

TEST(JudgeStep, ANormalRunIsKept) {
  // 2 ranks usual: 0.11 us/KiB, 5.2 us; copies 0.230, 0.622 (3.8x, 8.4x). 4 ranks usual
  // (14:21:06): 0.13 us/KiB, 10.8 us; copies 0.415, 0.878 (2.5x, 12.3x).
  const StepVerdict two = judgeStep(fitOf(0.11, 5.2, 0.230, 0.622), kZeroCopy);
  EXPECT_TRUE(two.consistent);
  EXPECT_TRUE(two.why.empty());
  EXPECT_NEAR(two.slopeRatio, 3.83, 0.01);
  EXPECT_LE(two.excess(), 1.0);
  EXPECT_TRUE(judgeStep(fitOf(0.13, 10.8, 0.415, 0.878), kZeroCopy).consistent);
}

TEST(JudgeStep, WithoutCopiesNothingIsJudged) {
  StepFit f = fitOf(0.11, 5.2, 0.230, 0.622);
  f.copyUs.clear();  // a step program that printed none
  EXPECT_FALSE(judgeStep(f, kZeroCopy).consistent);
  EXPECT_FALSE(judgeStep(fitOf(0.11, 5.2, 0, 0.622), kZeroCopy).consistent);
  EXPECT_FALSE(judgeStep(fitOf(0.11, 5.2, 0.230, 0.622), 1 << 20).consistent);  // none in place
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

StepVerdict judged(const StepFit& f) { return judgeStep(f, kZeroCopy); }

TEST(ChooseStep, ANormalFirstRunIsKeptAlone) {
  Runs runs{{fitOf(0.11, 5.0, 0.230, 0.622)}};
  StepChoice c;
  std::string error;
  ASSERT_TRUE(chooseStep(kStepAttempts, std::ref(runs), judged, c, error));
  EXPECT_EQ(runs.calls, 1);
  EXPECT_EQ(c.kept, 1);
  EXPECT_TRUE(c.consistent());
  EXPECT_EQ(describeChoice(c), "attempt 1 of 1 kept");
}

TEST(ChooseStep, ASlowRunIsRunAgainAndTheNormalOneKept) {
  Runs runs{{fitOf(0.55, 18.5, 0.230, 0.622), fitOf(0.11, 5.0, 0.230, 0.622)}};
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
  Runs runs{{fitOf(0.55, 18.5, 0.230, 0.622), fitOf(0.40, 15.0, 0.230, 0.622),
             fitOf(1.05, 38.7, 0.230, 0.622), fitOf(0.11, 5.0, 0.230, 0.622)}};
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
