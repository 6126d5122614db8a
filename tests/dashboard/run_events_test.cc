#include "dashboard/run_events.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "testing/idx_files.h"

namespace pstrain::dashboard {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

std::string StepLine(int rank, int step) {
  return json({{"event", "step"},
               {"rank", rank},
               {"role", "worker"},
               {"time", 1000.0 + step},
               {"step", step},
               {"loss", 2.0}})
      .dump();
}

Result<Run> Parse(const std::string& text, size_t max_points = 2000) {
  std::istringstream in(text);
  RunEventsOptions options;
  options.max_points_per_rank = max_points;
  return ParseRunEvents(in, "run.jsonl", options);
}

TEST(RunEventsTest, KeepsDrawnEventsAndSkipsTheRest) {
  const std::string text =
      "pstrain rank 1 (worker): step 1 loss 2.3\n"  // a human line
      "{\"event\":\"listen\",\"rank\":0,\"role\":\"server\",\"port\":1}\n"
      "[1, 2]\n"
      "{\"event\":\"error\",\"rank\":1,\"message\":\"x\"}\n"
      "{not json\n"
      "{\"rank\":1}\n"
      "{\"event\":7}\n" +
      StepLine(1, 0) + "\r\n" +
      "{\"event\":\"eval\",\"rank\":0,\"test_accuracy\":0.5}\n"
      "{\"event\":\"summary\",\"rank\":0,\"role\":\"server\"}\n";
  auto run = Parse(text);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->events.size(), 4u);
  EXPECT_EQ(run->events[0]["event"], "listen");
  EXPECT_EQ(run->events[1]["event"], "step");
  EXPECT_EQ(run->events[1]["loss"], 2.0);
  EXPECT_EQ(run->events[2]["test_accuracy"], 0.5);
  EXPECT_EQ(run->events[3]["event"], "summary");
}

TEST(RunEventsTest, NoPstrainEventIsBadInputNamingTheFile) {
  auto run = Parse("hello\n{\"event\":\"error\",\"rank\":0}\n");
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("run.jsonl: no pstrain event"),
            std::string::npos)
      << run.status().message();
  EXPECT_FALSE(Parse("").ok());
}

TEST(RunEventsTest, MissingFileIsNotFoundNamingIt) {
  ScratchDir dir;
  auto run = ReadRunEvents(dir.File("absent.jsonl"), {});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kNotFound);
  EXPECT_NE(run.status().message().find(dir.File("absent.jsonl")),
            std::string::npos);
}

TEST(RunEventsTest, NamesTheRunAfterTheFileStem) {
  ScratchDir dir;
  std::ofstream(dir.File("sync.jsonl")) << StepLine(1, 0) << "\n";
  auto run = ReadRunEvents(dir.File("sync.jsonl"), {});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->name, "sync");
  EXPECT_EQ(run->events.size(), 1u);
}

TEST(RunEventsTest, ThinsStepsPerRankKeepingFirstAndLastInOrder) {
  std::string text;
  for (int step = 0; step < 10000; ++step) {
    text += StepLine(1, step) + "\n";
    if (step < 3)
      text += StepLine(2, step) + "\n";
  }
  auto run = Parse(text, 100);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::vector<int> rank1, rank2;
  for (const json& e : run->events)
    (e["rank"] == 1 ? rank1 : rank2).push_back(e["step"].get<int>());
  EXPECT_EQ(rank2, (std::vector<int>{0, 1, 2}));
  ASSERT_GE(rank1.size(), 50u);
  EXPECT_LE(rank1.size(), 101u);
  EXPECT_EQ(rank1.front(), 0);
  EXPECT_EQ(rank1.back(), 9999);
  // Evenly spaced: every kept step but the last is a multiple of the stride.
  const int stride = rank1[1] - rank1[0];
  EXPECT_EQ(stride, 128);
  for (size_t i = 0; i + 1 < rank1.size(); ++i)
    EXPECT_EQ(rank1[i], static_cast<int>(i) * stride);
}

TEST(RunEventsTest, KeepsTheLastStepWhenThinningDropsIt) {
  std::string text;
  for (int step = 0; step < 4; ++step)
    text += StepLine(1, step) + "\n";
  auto run = Parse(text, 3);  // 4 kept > 3: halved to 0, 2; 3 is the last
  ASSERT_TRUE(run.ok());
  std::vector<int> steps;
  for (const json& e : run->events)
    steps.push_back(e["step"].get<int>());
  EXPECT_EQ(steps, (std::vector<int>{0, 2, 3}));
}

}  // namespace
}  // namespace pstrain::dashboard
