// A launch run scraped by Debian's real Prometheus (share/doc/metrics.md):
// the values Prometheus stored equal the run's own summaries, and promtool
// finds nothing wrong with any rank's /metrics.

#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "job_test.h"
#include "testing/http_get.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

// Rank -> its metrics port, from the listen events so far.
std::map<int, int> MetricsPorts(const std::string& out) {
  std::map<int, int> ports;
  for (const auto& e : FindEvents(out, "listen")) {
    if (e.contains("metrics_port"))
      ports[e["rank"].get<int>()] = e["metrics_port"].get<int>();
  }
  return ports;
}

std::string ScrapeConfig(const std::map<int, int>& ports) {
  std::string targets;
  for (const auto& [rank, port] : ports)
    targets += (targets.empty() ? "'" : ", '") + std::string("127.0.0.1:") +
               std::to_string(port) + "'";
  // honor_labels: the ranks' own `job` label (the job's id) wins over the
  // scrape job's name.
  return "global:\n  scrape_interval: 500ms\n"
         "scrape_configs:\n  - job_name: pstrain\n    honor_labels: true\n"
         "    static_configs:\n      - targets: [" +
         targets + "]\n";
}

// promtool check metrics on `text`: its output (empty when all is well).
std::string PromtoolCheck(const ScratchDir& dir, const std::string& text,
                          int rank) {
  const std::string in = dir.File("metrics-" + std::to_string(rank) + ".txt");
  std::ofstream(in) << text;
  Process check({"/bin/sh", "-c", "promtool check metrics < " + in + " 2>&1"});
  ProcessResult r = check.Wait(30);
  return r.exit_code == 0
             ? r.out
             : "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
}

// Prometheus's answer to an instant query: value by rank. Once the ranks
// have exited, Prometheus has marked their series stale, so a query asks
// for the last value of a range (last_over_time), which skips the markers.
std::map<int, double> Query(int port, const std::string& query) {
  HttpReply reply =
      HttpGet("127.0.0.1", port, "/api/v1/query?query=" + UrlEncode(query));
  std::map<int, double> values;
  auto j = json::parse(reply.body, nullptr, false);
  if (reply.status != 200 || !j.is_object() ||
      j.value("status", "") != "success") {
    ADD_FAILURE() << query << ": HTTP " << reply.status << " " << reply.body;
    return values;
  }
  for (const auto& r : j["data"]["result"]) {
    values[std::stoi(r["metric"]["rank"].get<std::string>())] =
        std::stod(r["value"][1].get<std::string>());
  }
  return values;
}

TEST(PrometheusTest, ScrapedValuesEqualTheRunsSummaries) {
  ScratchDir dir;
  Process run({PstrainBin(), "launch", "--world_size", "3", "--master_port",
               "0", "--metrics_port", "0", "--metrics_addr", "127.0.0.1",
               "--metrics_linger", "3", "--max_steps", "60", "--json",

               "--mode", "async", "--checkpoint", dir.File("m.pt")});
  std::map<int, int> ports;
  for (int i = 0; i < 1500 && ports.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ports = MetricsPorts(run.OutSoFar());
  }
  ASSERT_EQ(ports.size(), 3u) << run.OutSoFar();

  const std::string config = dir.File("prometheus.yml");
  std::ofstream(config) << ScrapeConfig(ports);
  Process prometheus({"/usr/bin/prometheus", "--config.file=" + config,
                      "--storage.tsdb.path=" + dir.File("tsdb"),
                      "--web.listen-address=127.0.0.1:0"});
  // Each rank's exposition, mid-run, passes promtool.
  for (const auto& [rank, port] : ports) {
    HttpReply metrics = HttpGet("127.0.0.1", port, "/metrics");
    ASSERT_EQ(metrics.status, 200) << "rank " << rank;
    EXPECT_NE(metrics.body.find("pstrain_version{"), std::string::npos);
    EXPECT_EQ(PromtoolCheck(dir, metrics.body, rank), "") << "rank " << rank;
  }
  ProcessResult done = run.Wait(300);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  int prometheus_port = -1;
  for (int i = 0; i < 500 && prometheus_port < 0; ++i) {
    prometheus_port = ListeningPort(prometheus.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(prometheus_port, 0) << "prometheus never listened";

  std::map<int, double> want_samples;
  uint64_t final_version = 0;
  for (const auto& s : FindEvents(done.out, "summary")) {
    if (s["role"] == "worker")
      want_samples[s["rank"].get<int>()] = s["samples"].get<double>();
    if (s["rank"] == 0)
      final_version = s["steps"].get<uint64_t>();
  }
  ASSERT_EQ(want_samples.size(), 2u) << done.out;
  ASSERT_GT(final_version, 0u);
  // Once the ranks have exited, Prometheus has marked their series stale:
  // the last value of a range skips the markers.
  EXPECT_EQ(
      Query(prometheus_port, "last_over_time(pstrain_samples_total[10m])"),
      want_samples);
  EXPECT_EQ(Query(prometheus_port,
                  "last_over_time(pstrain_version{role=\"server\"}[10m])"),
            (std::map<int, double>{{0, double(final_version)}}));
  // One job id on every rank's series (honor_labels kept it); scrapes
  // before a rank knew the job carry the scrape job's name instead.
  HttpReply jobs = HttpGet(
      "127.0.0.1", prometheus_port,
      "/api/v1/query?query=" +
          UrlEncode("count by (job) (last_over_time(pstrain_version[10m]))"));
  auto j = json::parse(jobs.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << jobs.body;
  std::vector<json> ids;
  for (const auto& g : j["data"]["result"]) {
    if (g["metric"]["job"] != "pstrain")
      ids.push_back(g);
  }
  ASSERT_EQ(ids.size(), 1u) << jobs.body;
  EXPECT_EQ(ids[0]["metric"]["job"].get<std::string>().size(), 12u);
  EXPECT_EQ(ids[0]["value"][1], "3") << jobs.body;
}

}  // namespace
}  // namespace pstrain::testing
