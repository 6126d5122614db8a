#include "metrics/registry.h"

#include <thread>

#include <gtest/gtest.h>

namespace pstrain::metrics {
namespace {

TEST(RegistryTest, RendersTheTextFormatWithLabels) {
  Registry r;
  r.SetLabel("rank", "1");
  r.SetLabel("role", "worker");
  Counter* c = r.AddCounter("pstrain_samples_total", "Samples");
  Gauge* g = r.AddGauge("pstrain_loss", "Loss");
  c->Add(32);
  c->Add(32);
  g->Set(0.5);
  EXPECT_EQ(r.Render(),
            "# HELP pstrain_samples_total Samples\n"
            "# TYPE pstrain_samples_total counter\n"
            "pstrain_samples_total{rank=\"1\",role=\"worker\"} 64\n"
            "# HELP pstrain_loss Loss\n"
            "# TYPE pstrain_loss gauge\n"
            "pstrain_loss{rank=\"1\",role=\"worker\"} 0.5\n");
}

TEST(RegistryTest, HistogramBucketsAreCumulative) {
  Registry r;
  Histogram* h = r.AddHistogram("pstrain_step_seconds", "Step", {0.1, 1});
  h->Observe(0.05);
  h->Observe(0.5);
  h->Observe(0.5);
  h->Observe(3);
  EXPECT_EQ(r.Render(),
            "# HELP pstrain_step_seconds Step\n"
            "# TYPE pstrain_step_seconds histogram\n"
            "pstrain_step_seconds_bucket{le=\"0.1\"} 1\n"
            "pstrain_step_seconds_bucket{le=\"1\"} 3\n"
            "pstrain_step_seconds_bucket{le=\"+Inf\"} 4\n"
            "pstrain_step_seconds_sum 4.05\n"
            "pstrain_step_seconds_count 4\n");
}

TEST(RegistryTest, HistogramMirrorsCountsByValue) {
  Histogram h({0, 1, 4});
  h.SetFromValueCounts({5, 3, 0, 2, 0, 0, 1});  // values 0,1,3,6
  EXPECT_EQ(h.Cumulative(), (std::vector<uint64_t>{5, 8, 10, 11}));
  EXPECT_DOUBLE_EQ(h.sum(), 3 + 6 + 6);
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry r;
  r.SetLabel("job", "a\"b\\c\nd");
  r.AddGauge("g", "line\\one\ntwo");
  EXPECT_EQ(r.Render(),
            "# HELP g line\\\\one\\ntwo\n# TYPE g gauge\n"
            "g{job=\"a\\\"b\\\\c\\nd\"} 0\n");
}

TEST(RegistryTest, FormatsSpecialAndExactValues) {
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(std::stod(FormatValue(1.0 / 3)), 1.0 / 3);
  EXPECT_EQ(FormatValue(60000), "60000");
}

TEST(RegistryTest, CounterRaiseToNeverLowers) {
  Counter c;
  c.RaiseTo(10);
  c.RaiseTo(4);
  EXPECT_EQ(c.value(), 10);
}

TEST(RegistryTest, ConcurrentAddsAreAllCounted) {
  Counter c;
  Histogram h({1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Add(1);
        h.Observe(0.5);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.Cumulative().back(), 40000u);
  EXPECT_EQ(h.sum(), 20000);
}

}  // namespace
}  // namespace pstrain::metrics
