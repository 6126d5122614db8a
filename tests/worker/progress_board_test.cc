// ProgressBoard: the JSON a heartbeat carries to rank 0, and its handover
// from the training thread to the heartbeat thread.

#include "worker/progress_board.h"

#include <limits>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pstrain::worker {
namespace {

ProgressFigures Sample() {
  ProgressFigures f;
  f.steps = 3;
  f.samples = 192;
  f.loss = 0.5;
  f.compute_seconds = 0.25;
  f.communication_seconds = 0.125;
  f.bytes_pushed = 1024;
  f.bytes_pulled = 2048;
  f.version = 7;
  f.samples_per_second = 512;
  return f;
}

TEST(ProgressBoardTest, JsonIsCompactAndNamesEveryFigure) {
  EXPECT_EQ(ProgressJson(Sample()),
            R"({"steps":3,"samples":192,"loss":0.5,"compute_seconds":0.25,)"
            R"("communication_seconds":0.125,"bytes_pushed":1024,)"
            R"("bytes_pulled":2048,"version":7,"samples_per_second":512.0})");
}

TEST(ProgressBoardTest, ANonFiniteLossIsNull) {
  ProgressFigures f = Sample();
  f.loss = std::numeric_limits<double>::quiet_NaN();
  const auto j = nlohmann::json::parse(ProgressJson(f));
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_EQ(j["steps"], 3);
}

TEST(ProgressBoardTest, EmptyUntilPublishedThenTheLastFigures) {
  ProgressBoard board;
  EXPECT_EQ(board.Json(), "");
  board.Publish(Sample());
  ProgressFigures later = Sample();
  later.steps = 4;
  board.Publish(later);
  EXPECT_EQ(board.Json(), ProgressJson(later));
}

TEST(ProgressBoardTest, AReaderSeesWholeFiguresWhileAWriterPublishes) {
  ProgressBoard board;
  std::thread writer([&board] {
    ProgressFigures f;
    for (int i = 1; i <= 2000; ++i) {
      f.steps = i;
      f.samples = 2 * i;
      board.Publish(f);
    }
  });
  for (int i = 0; i < 200; ++i) {
    const std::string json = board.Json();
    if (json.empty())
      continue;
    const auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["samples"].get<int64_t>(), 2 * j["steps"].get<int64_t>());
  }
  writer.join();
}

}  // namespace
}  // namespace pstrain::worker
