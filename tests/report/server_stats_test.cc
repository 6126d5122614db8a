#include "report/server_stats.h"

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pstrain::report {
namespace {

TEST(ServerStatsTest, TargetFieldsOnlyWithATargetAndNullWhenNotReached) {
  ServerStats s;
  s.steps = 7;
  auto j = ToJson(s);
  EXPECT_EQ(j["steps"], 7u);
  EXPECT_FALSE(j.contains("target_accuracy"));
  EXPECT_FALSE(j.contains("steps_to_target"));

  s.target_accuracy = 0.9;
  j = ToJson(s);
  EXPECT_EQ(j["target_accuracy"], 0.9);
  EXPECT_EQ(j["target_reached"], false);
  EXPECT_TRUE(j["time_to_target_seconds"].is_null());
  EXPECT_TRUE(j["steps_to_target"].is_null());

  s.target_reached = true;
  s.time_to_target_seconds = 12.5;
  s.steps_to_target = 300;
  j = ToJson(s);
  EXPECT_EQ(j["time_to_target_seconds"], 12.5);
  EXPECT_EQ(j["steps_to_target"], 300u);
}

TEST(ServerStatsTest, StalenessHistogramIsAnObjectByStaleness) {
  ServerStats s;
  EXPECT_EQ(ToJson(s)["staleness_histogram"], nlohmann::json::object());
  s.staleness_histogram = {{"0", 5}, {"3", 1}};
  EXPECT_EQ(ToJson(s)["staleness_histogram"],
            nlohmann::json({{"0", 5}, {"3", 1}}));
}

// share/doc/statistics.md documents every field.
TEST(ServerStatsTest, EveryFieldIsDocumented) {
  std::ifstream in(std::string(PSTRAIN_SOURCE_DIR) +
                   "/share/doc/statistics.md");
  ASSERT_TRUE(in);
  const std::string doc(std::istreambuf_iterator<char>(in), {});
  const std::string server = doc.substr(doc.find("## Server"));
  ServerStats s;
  s.target_accuracy = 0.5;
  s.target_perplexity = 100;
  s.test_perplexity = 120;
  const auto j = ToJson(s);
  EXPECT_EQ(j.size(), 33u);
  for (const auto& item : j.items()) {
    EXPECT_NE(server.find("| `" + item.key() + "` |"), std::string::npos)
        << item.key();
  }
}

}  // namespace
}  // namespace pstrain::report
