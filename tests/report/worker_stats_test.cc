#include "report/worker_stats.h"

#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pstrain::report {
namespace {

TEST(WorkerStatsTest, JsonRoundTrip) {
  WorkerStats s;
  s.steps = 7;
  s.samples = 56;
  s.wall_seconds = 1.5;
  s.samples_per_second = 56 / 1.5;
  s.compute_seconds = 1.25;
  s.communication_seconds = 0.25;
  s.bytes_pushed = uint64_t{1} << 40;
  s.bytes_pulled = 12345;
  s.version = 9;
  s.reconnects = 1;
  s.stopped_early = true;
  s.peak_rss_bytes = 1 << 30;
  auto back = WorkerStatsFromJson(nlohmann::json::parse(ToJson(s).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ToJson(*back), ToJson(s));
  EXPECT_EQ(back->bytes_pushed, uint64_t{1} << 40);
  EXPECT_TRUE(back->stopped_early);
}

TEST(WorkerStatsTest, MissingOrMistypedFieldIsCorruption) {
  auto j = ToJson(WorkerStats{});
  j.erase("samples");
  auto r = WorkerStatsFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("samples"), std::string::npos)
      << r.status().message();
  j = ToJson(WorkerStats{});
  j["steps"] = "many";
  EXPECT_EQ(WorkerStatsFromJson(j).status().code(), StatusCode::kCorruption);
  j = ToJson(WorkerStats{});
  j["rank"] = 1;  // the server adds its own fields
  EXPECT_TRUE(WorkerStatsFromJson(j).ok());
}

// share/doc/statistics.md documents every field.
TEST(WorkerStatsTest, EveryFieldIsDocumented) {
  std::ifstream in(std::string(PSTRAIN_SOURCE_DIR) +
                   "/share/doc/statistics.md");
  ASSERT_TRUE(in);
  const std::string doc(std::istreambuf_iterator<char>(in), {});
  const auto j = ToJson(WorkerStats{});
  EXPECT_EQ(j.size(), 17u);
  for (const auto& item : j.items()) {
    EXPECT_NE(doc.find("| `" + item.key() + "` |"), std::string::npos)
        << item.key();
  }
}

}  // namespace
}  // namespace pstrain::report
