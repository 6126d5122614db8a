// A launch run scraped by Debian's real Prometheus (share/doc/metrics.md):
// the values Prometheus stored equal the run's own summaries, and promtool
// finds nothing wrong with any rank's /metrics. The ranks linger until the
// test has seen the final values stored and ends the linger with SIGTERM,
// which then exits 0 (the run is complete).

#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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

// Prometheus's answer to an instant query: value by rank; nullopt while
// it cannot answer yet (starting up) or answers an error.
std::optional<std::map<int, double>> Query(int port, const std::string& query) {
  HttpReply reply =
      HttpGet("127.0.0.1", port, "/api/v1/query?query=" + UrlEncode(query));
  auto j = json::parse(reply.body, nullptr, false);
  if (reply.status != 200 || !j.is_object() ||
      j.value("status", "") != "success") {
    return std::nullopt;
  }
  std::map<int, double> values;
  for (const auto& r : j["data"]["result"]) {
    values[std::stoi(r["metric"]["rank"].get<std::string>())] =
        std::stod(r["value"][1].get<std::string>());
  }
  return values;
}

// What a run's summaries say Prometheus should hold.
struct Summaries {
  std::map<int, double> samples;  // worker rank -> samples
  std::map<int, double> version;  // {0: rank 0's final version}
};

// Waits up to `seconds` for all three ranks' summaries (then each rank
// lingers, serving its final values, until the test signals launch).
std::optional<Summaries> WaitForSummaries(const Process& run, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto all = FindEvents(run.OutSoFar(), "summary");
    if (all.size() == 3) {
      Summaries want;
      for (const auto& s : all) {
        if (s["role"] == "worker")
          want.samples[s["rank"].get<int>()] = s["samples"].get<double>();
        if (s["rank"] == 0)
          want.version[0] = s["steps"].get<double>();
      }
      return want;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// The job ids of pstrain_version's series by rank count, as Prometheus
// holds them; scrapes before a rank knew the job carry the scrape job's
// name instead, left out.
std::map<std::string, std::string> JobIds(int port) {
  HttpReply jobs = HttpGet(
      "127.0.0.1", port,
      "/api/v1/query?query=" +
          UrlEncode("count by (job) (last_over_time(pstrain_version[10m]))"));
  auto j = json::parse(jobs.body, nullptr, false);
  std::map<std::string, std::string> ids;
  if (!j.is_object() || j.value("status", "") != "success")
    return ids;
  for (const auto& g : j["data"]["result"]) {
    const std::string job = g["metric"].value("job", "");
    if (job != "pstrain")
      ids[job] = g["value"][1].get<std::string>();
  }
  return ids;
}

const char kSamples[] = "last_over_time(pstrain_samples_total[10m])";
const char kVersion[] = "last_over_time(pstrain_version{role=\"server\"}[10m])";

// Whether Prometheus holds the summaries' values and one job id on every
// rank's series.
bool Stored(int port, const Summaries& want) {
  const auto ids = JobIds(port);
  return Query(port, kSamples) == want.samples &&
         Query(port, kVersion) == want.version && ids.size() == 1 &&
         ids.begin()->second == "3";
}

TEST(PrometheusTest, ScrapedValuesEqualTheRunsSummaries) {
  ScratchDir dir;
  // Each rank lingers (up to 10 minutes) until the test has seen its final
  // values stored, and then ends the linger with SIGTERM to launch.
  Process run({PstrainBin(), "launch", "--world_size", "3", "--master_port",
               "0", "--metrics_port", "0", "--metrics_addr", "127.0.0.1",
               "--metrics_linger", "600", "--max_steps", "60", "--json",
               "--mode", "async", "--checkpoint", dir.File("m.pt")});
  std::map<int, int> ports;
  for (int i = 0; i < 6000 && ports.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ports = MetricsPorts(run.OutSoFar());
  }
  ASSERT_EQ(ports.size(), 3u) << run.OutSoFar();

  const std::string config = dir.File("prometheus.yml");
  std::ofstream(config) << ScrapeConfig(ports);
  Process prometheus({"/usr/bin/prometheus", "--config.file=" + config,
                      "--storage.tsdb.path=" + dir.File("tsdb"),
                      "--web.listen-address=127.0.0.1:0"});
  // Each rank's exposition (mid-run or lingering) passes promtool.
  for (const auto& [rank, port] : ports) {
    HttpReply metrics = HttpGet("127.0.0.1", port, "/metrics");
    ASSERT_EQ(metrics.status, 200) << "rank " << rank;
    EXPECT_NE(metrics.body.find("pstrain_version{"), std::string::npos);
    EXPECT_EQ(PromtoolCheck(dir, metrics.body, rank), "") << "rank " << rank;
  }
  const std::optional<Summaries> want = WaitForSummaries(run, 300);
  ASSERT_TRUE(want.has_value()) << run.OutSoFar();
  ASSERT_EQ(want->samples.size(), 2u) << run.OutSoFar();
  ASSERT_GT(want->version.at(0), 0);
  int prometheus_port = -1;
  for (int i = 0; i < 6000 && prometheus_port < 0; ++i) {
    prometheus_port = ListeningPort(prometheus.pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(prometheus_port, 0) << "prometheus never listened";
  // Scrapes every 500 ms: the final values come within a few, however
  // long Prometheus took to start.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!Stored(prometheus_port, *want) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  run.Signal(SIGTERM);
  ProcessResult done = run.Wait(120);
  EXPECT_EQ(done.exit_code, 0) << done.err;

  EXPECT_EQ(Query(prometheus_port, kSamples), want->samples);
  EXPECT_EQ(Query(prometheus_port, kVersion), want->version);
  // One job id on every rank's series (honor_labels kept it).
  const auto ids = JobIds(prometheus_port);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids.begin()->first.size(), 12u);
  EXPECT_EQ(ids.begin()->second, "3");
}

// Waits up to `seconds` for `p`'s summary event; whether it came.
bool WaitForSummary(const Process& p, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (FindEvent(p.OutSoFar(), "summary").is_null()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// --metrics_linger: SIGTERM before a process's summary ends it as it
// would without the flag (by the signal); after the summary it only ends
// the linger, and the process exits 0.
TEST(MetricsLingerTest, SigtermEndsTheLingerWithStatusZeroAndARunAsBefore) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 50);
  const std::vector<std::string> metrics = {
      "--metrics_port",   "0",   "--metrics_addr", "127.0.0.1",
      "--metrics_linger", "600", "--json",         "--data_dir",
      dir.path()};
  Process alone(Concat({PstrainBin(), "serve", "--world_size", "2",
                        "--master_port", "0", "--checkpoint", dir.File("a.pt")},
                       metrics));
  ASSERT_GT(alone.ListenPort(60), 0);  // it waits for its worker
  alone.Signal(SIGTERM);
  EXPECT_EQ(alone.Wait(60).exit_code, 128 + SIGTERM);

  Process serve(
      Concat({PstrainBin(), "serve", "--world_size", "2", "--master_port", "0",
              "--model", "mlp", "--batch_size", "8", "--max_steps", "5",
              "--checkpoint", dir.File("m.pt")},
             metrics));
  const int port = serve.ListenPort(60);
  ASSERT_GT(port, 0);
  Process work(Concat({PstrainBin(), "work", "--rank", "1", "--world_size", "2",
                       "--master_port", std::to_string(port)},
                      metrics));
  for (Process* p : {&work, &serve}) {
    ASSERT_TRUE(WaitForSummary(*p, 120)) << p->OutSoFar();
    p->Signal(SIGTERM);
    const ProcessResult r = p->Wait(60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

}  // namespace
}  // namespace pstrain::testing
