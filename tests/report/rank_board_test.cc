#include "report/rank_board.h"

#include <sstream>

#include <gtest/gtest.h>

namespace pstrain::report {
namespace {

using nlohmann::json;

json Step(int step, int total) {
  return {{"event", "step"}, {"rank", 1},
          {"step", step},    {"total_steps", total},
          {"loss", 0.5},     {"samples_per_second", 1234.4}};
}

TEST(RankBoardTest, BarShowsStepsLossRateAndEta) {
  EXPECT_EQ(RankBoard::Bar(30, 120, 0.51234, 99.6, 75),
            "[#####---------------] 30/120 loss 0.5123 100 samples/s ETA 1:15");
  EXPECT_EQ(RankBoard::Bar(0, 10, 2, 0, -1),
            "[--------------------] 0/10 loss 2.0000 0 samples/s ETA ?");
  EXPECT_EQ(RankBoard::Bar(10, 10, 2, 0, 3725),
            "[####################] 10/10 loss 2.0000 0 samples/s ETA 1:02:05");
}

TEST(RankBoardTest, EtaFollowsTheStepsSeen) {
  std::ostringstream out;
  double now = 100;
  RankBoard board({&out, 200, [&now] { return now; }}, {"rank 0", "rank 1"});
  board.Event(1, Step(10, 110));
  EXPECT_NE(board.RowText(1).find("ETA ?"), std::string::npos);
  now = 110;  // 10 steps in 10 s: 90 left take 90 s
  board.Event(1, Step(20, 110));
  EXPECT_NE(board.RowText(1).find(" 20/110 "), std::string::npos)
      << board.RowText(1);
  EXPECT_NE(board.RowText(1).find("ETA 1:30"), std::string::npos)
      << board.RowText(1);
}

TEST(RankBoardTest, RedrawsInPlaceAndPrintsOtherLinesAbove) {
  std::ostringstream out;
  RankBoard board({&out, 200, [] { return 0.0; }}, {"rank 0", "rank 1"});
  board.Event(0, {{"event", "listen"}, {"port", 5}});
  EXPECT_EQ(
      out.str(),
      "[rank 0] listen port=5\n[rank 0] listen port=5\n[rank 1] starting\n");
  out.str("");
  board.Event(1, Step(1, 4));
  EXPECT_EQ(
      out.str(),
      "\r\033[2A\033[J[rank 0] listen port=5\n[rank 1] [#####---------------]"
      " 1/4 loss 0.5000 1234 samples/s ETA ?\n");
  out.str("");
  board.Line(2, "pstrain launch: stopping");
  EXPECT_EQ(
      out.str().rfind("\r\033[2A\033[Jpstrain launch: stopping\n[rank 0] ", 0),
      0u);
  board.Event(1, {{"event", "summary"}, {"steps", 4}});
  EXPECT_EQ(board.RowText(1), "done: 4 steps");
}

TEST(RankBoardTest, RowsAreCutToTheWidth) {
  std::ostringstream out;
  RankBoard board({&out, 12, [] { return 0.0; }}, {"rank 1"});
  board.Line(0, "a line longer than the width stays whole");
  EXPECT_EQ(out.str(),
            "[rank 1] a line longer than the width stays whole\n[rank 1] st\n");
}

}  // namespace
}  // namespace pstrain::report
