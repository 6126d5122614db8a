// Rank 0's live dashboard during a real launch run, loaded in headless
// Chromium: every chart drew the running job's points (read back from the
// page's #drawn); bad requests to the port each get an HTTP error and the
// run ends as it would have; a metrics port already taken exits 2. The
// workers of pstrain_testing hold mid-run until the test has read the
// page.

#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "job_test.h"
#include "testing/headless_chromium.h"
#include "testing/http_get.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::testing {
namespace {

using asio::ip::tcp;
using data::testing::ScratchDir;
using nlohmann::json;

int Rank0MetricsPort(const std::string& out) {
  for (const auto& e : FindEvents(out, "listen")) {
    if (e["rank"] == 0 && e.contains("metrics_port"))
      return e["metrics_port"].get<int>();
  }
  return -1;
}

// The status line's code of `request`'s answer.
int StatusOf(int port, const std::string& request) {
  asio::io_context io;
  tcp::socket s(io);
  asio::error_code ec;
  s.connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)},
            ec);
  asio::write(s, asio::buffer(request), ec);
  std::string reply;
  asio::read(s, asio::dynamic_buffer(reply), ec);
  return reply.size() > 12 ? std::stoi(reply.substr(9, 3)) : 0;
}

// Sends `port` what a dashboard must survive (an unknown page, a POST, an
// oversized body, a thousand idle connections); each gets an HTTP error.
void SendBadRequests(int port) {
  EXPECT_EQ(HttpGet("127.0.0.1", port, "/no/such/page").status, 404);
  EXPECT_EQ(StatusOf(port,
                     "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: "
                     "2\r\nConnection: close\r\n\r\nhi"),
            405);
  const std::string big(1 << 20, 'x');
  EXPECT_EQ(StatusOf(port, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                               std::to_string(big.size()) + "\r\n\r\n" + big),
            413);
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4096);
  setrlimit(RLIMIT_NOFILE, &files);
  asio::io_context io;
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 1000; ++i) {
    idle.emplace_back(io);
    asio::error_code ec;
    idle.back().connect(
        {asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, ec);
  }
  // Beyond the limit the server answers 503 and closes; once the idle
  // ones are gone it serves again.
  EXPECT_EQ(HttpGet("127.0.0.1", port, "/metrics").status, 503);
  idle.clear();
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    status = HttpGet("127.0.0.1", port, "/metrics").status;
  }
  EXPECT_EQ(status, 200);
}

// Waits up to `seconds` for rank 0 to listen and to have evaluated
// twice (the eval chart's points); its metrics port, or -1.
int WaitForPortAndEvals(const Process& run, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string out = run.OutSoFar();
    const int port = Rank0MetricsPort(out);
    if (port > 0 && FindEvents(out, "eval").size() >= 2)
      return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// Whether rank 0's /api/events holds what the other charts draw: two
// progress events of each worker (their heartbeats bring them every
// second) and a staleness histogram of rank 0's.
bool ChartsHaveTheirEvents(int port) {
  const HttpReply reply = HttpGet("127.0.0.1", port, "/api/events");
  const json j = json::parse(reply.body, nullptr, false);
  if (reply.status != 200 || !j.is_object() || !j.contains("runs"))
    return false;
  std::map<int, int> progress;
  bool staleness = false;
  for (const auto& e : j["runs"].at(0).value("events", json::array())) {
    if (e.value("event", "") != "progress")
      continue;
    if (e.value("role", "") == "worker")
      ++progress[e.value("rank", -1)];
    const json histogram = e.value("staleness_histogram", json());
    staleness = staleness || (histogram.is_object() && !histogram.empty());
  }
  return staleness && progress[1] >= 2 && progress[2] >= 2;
}

// An async launch of two workers on the tiny data set, under
// pstrain_testing: every worker holds before its 300th step (of 1000)
// until `go` exists, so the job is alive while the page loads, on a
// machine of any speed.
std::vector<std::string> HeldJob(const ScratchDir& dir, const std::string& go) {
  return {PstrainTestingBin(),
          "launch",
          "--world_size",
          "3",
          "--master_port",
          "0",
          "--mode",
          "async",
          "--model",
          "mlp",
          "--batch_size",
          "8",
          "--max_steps",
          "1000",
          "--epochs",
          "100",
          "--log_interval",
          "10",
          "--eval_interval",
          "100",
          "--threads",
          "1",
          "--json",
          "--data_dir",
          dir.path(),
          "--metrics_port",
          "0",
          "--metrics_addr",
          "127.0.0.1",
          "--checkpoint",
          dir.File("m.pt"),
          "--hold_before_step",
          "300",
          "--hold_until",
          go};
}

// Waits up to `seconds` for ChartsHaveTheirEvents.
bool WaitForChartEvents(int port, double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!ChartsHaveTheirEvents(port)) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

TEST(DashboardLiveTest, ChromiumDrawsTheRunningJobAndBadRequestsChangeNothing) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 50);
  const std::string go = dir.File("go");
  Process run(HeldJob(dir, go));
  const int port = WaitForPortAndEvals(run, 300);
  ASSERT_GT(port, 0) << run.OutSoFar();
  SendBadRequests(port);
  ASSERT_TRUE(WaitForChartEvents(port, 120))
      << HttpGet("127.0.0.1", port, "/api/events").body;
  auto dom = DumpDom("http://127.0.0.1:" + std::to_string(port) + "/", 3000);
  ASSERT_TRUE(dom.ok()) << dom.status().ToString();
  const json drawn = json::parse(ElementText(*dom, "drawn"), nullptr, false);
  ASSERT_TRUE(drawn.is_object()) << ElementText(*dom, "drawn");
  const json live = json::array({"live"});
  for (const char* chart : {"loss", "throughput"}) {
    EXPECT_EQ(drawn[chart]["runs"], live) << chart << ": " << drawn;
    EXPECT_EQ(drawn[chart]["series"], 2) << chart << ": " << drawn;
    EXPECT_GE(drawn[chart]["points"].get<int>(), 2 * 2) << chart;
  }
  EXPECT_GE(drawn["eval"]["points"].get<int>(), 2) << drawn;
  EXPECT_GE(drawn["times"]["points"].get<int>(), 2 * 2) << drawn;
  EXPECT_GE(drawn["staleness"]["points"].get<int>(), 1) << drawn;
  EXPECT_GE(drawn["flags"]["rows"].get<int>(), 10) << drawn;

  std::ofstream(go).close();
  ProcessResult done = run.Wait(300);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  // Training went on untouched: every worker did all of its steps.
  int workers = 0;
  for (const auto& s : FindEvents(done.out, "summary")) {
    if (s["role"] == "worker") {
      EXPECT_EQ(s["steps"], 1000) << s;
      ++workers;
    }
  }
  EXPECT_EQ(workers, 2);
}

TEST(DashboardLiveTest, MetricsPortTakenExits2WithOneLine) {
  asio::io_context io;
  tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  const int port = taken.local_endpoint().port();
  ProcessResult r = RunPstrain(
      {"serve", "--world_size", "2", "--master_port", "0", "--metrics_port",
       std::to_string(port), "--metrics_addr", "127.0.0.1"},
      60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(
      r.err.rfind(
          "pstrain: error: --metrics_port " + std::to_string(port) + ": ", 0),
      0u)
      << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace pstrain::testing
