#include "bench/seed_runs.h"

#include <gtest/gtest.h>

namespace pstrain::bench {
namespace {

using nlohmann::json;

TEST(SeedRunsTest, MeansEveryNumberAndGivesTheAccuracysSd) {
  const std::vector<json> runs = {{{"mode", "async"},
                                   {"seed", 1},
                                   {"test_accuracy", 0.87},
                                   {"samples_per_second", 1000.0},
                                   {"peak_rss_bytes", {{"server", 10}}}},
                                  {{"mode", "async"},
                                   {"seed", 2},
                                   {"test_accuracy", 0.88},
                                   {"samples_per_second", 900.0},
                                   {"peak_rss_bytes", {{"server", 12}}}},
                                  {{"mode", "async"},
                                   {"seed", 3},
                                   {"test_accuracy", 0.89},
                                   {"samples_per_second", 1100.0},
                                   {"peak_rss_bytes", {{"server", 11}}}}};
  const json row = MeanOverSeeds(runs);
  EXPECT_EQ(row["mode"], "async");
  EXPECT_EQ(row["seed"], 1);
  EXPECT_EQ(row["seeds"], json::array({1, 2, 3}));
  EXPECT_NEAR(row["test_accuracy"].get<double>(), 0.88, 1e-12);
  EXPECT_EQ(row["test_accuracies"], json::array({0.87, 0.88, 0.89}));
  EXPECT_NEAR(row["test_accuracy_sd"].get<double>(), 0.01, 1e-12);
  EXPECT_NEAR(row["samples_per_second"].get<double>(), 1000.0, 1e-9);
  EXPECT_NEAR(row["samples_per_second_sd"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(row["peak_rss_bytes"]["server"], 10);  // not a top-level number
}

TEST(SeedRunsTest, OneRunHasNoSd) {
  const json row = MeanOverSeeds({{{"seed", 4}, {"test_accuracy", 0.5}}});
  EXPECT_EQ(row["test_accuracy"], 0.5);
  EXPECT_EQ(row["seeds"], json::array({4}));
  EXPECT_TRUE(row["test_accuracy_sd"].is_null());
}

}  // namespace
}  // namespace pstrain::bench
