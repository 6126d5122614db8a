#include "ps/job/interval.h"

#include <gtest/gtest.h>

namespace pstrain::ps {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(IntervalTest, ParsesStepsAndSeconds) {
  EXPECT_EQ(ParseInterval("--checkpoint_every", "100")->steps, 100u);
  EXPECT_EQ(ParseInterval("--checkpoint_every", "2.5s")->time,
            milliseconds(2500));
  for (const char* bad : {"", "0", "-3", "1.5", "s", "0s", "10m"}) {
    auto r = ParseInterval("--checkpoint_every", bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(
      ParseInterval("--checkpoint_every", "x").status().message(),
      "--checkpoint_every 'x': expected N (steps, >= 1) or Ns (seconds, > 0)");
  EXPECT_TRUE(ParseInterval("--eval_interval", "0", true)->empty());
  EXPECT_EQ(ParseInterval("--eval_interval", "y", true).status().message(),
            "--eval_interval 'y': expected N (steps, >= 1) or Ns (seconds, > "
            "0) or 0 (never)");
}

TEST(IntervalTest, FormatReadsBack) {
  for (const char* text : {"100", "2.5s", "30s", "0"}) {
    auto parsed = ParseInterval("--eval_interval", text, true);
    ASSERT_TRUE(parsed.ok()) << text;
    EXPECT_EQ(FormatInterval(*parsed), text);
  }
}

TEST(IntervalTest, StepsAreDueAtMultiplesWithLeadAndSkipThosePassed) {
  const auto t0 = Clock::now();
  IntervalSchedule s({3, {}}, 0, t0);
  EXPECT_FALSE(s.Due(1, 0, t0));
  EXPECT_EQ(s.Due(3, 0, t0), 3u);
  EXPECT_EQ(s.Due(1, 2, t0), 3u);  // two versions of notice
  EXPECT_EQ(s.Due(2, 3, t0), 3u);  // still the multiple, not 5
  EXPECT_EQ(s.Due(4, 3, t0), 6u);  // 3 passed: the next multiple
  EXPECT_FALSE(s.Due(4, 0, t0));   // which is not due without notice
  s.Done(3, t0);
  EXPECT_FALSE(s.Due(5, 0, t0));
  EXPECT_EQ(s.Due(6, 0, t0), 6u);
  IntervalSchedule resumed({3, {}}, 7, t0);  // counts from where it resumed
  EXPECT_EQ(resumed.Due(9, 0, t0), 9u);
  EXPECT_FALSE(
      IntervalSchedule({}, 0, t0).Due(100, 0, t0 + milliseconds(100000)));
}

TEST(IntervalTest, SecondsAreDueOnceTheyPassed) {
  const auto t0 = Clock::now();
  IntervalSchedule s({0, milliseconds(1000)}, 0, t0);
  EXPECT_FALSE(s.Due(5, 0, t0 + milliseconds(999)));
  EXPECT_EQ(s.Due(5, 3, t0 + milliseconds(1000)), 8u);
  s.Done(8, t0 + milliseconds(1000));
  EXPECT_FALSE(s.Due(9, 0, t0 + milliseconds(1500)));
  EXPECT_EQ(s.Due(9, 0, t0 + milliseconds(2000)), 9u);
}

}  // namespace
}  // namespace pstrain::ps
