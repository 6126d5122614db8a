// Rank 0's live dashboard during a real launch run, loaded in headless
// Chromium: every chart drew the running job's points (read back from the
// page's #drawn); bad requests to the port each get an HTTP error and the
// run ends as it would have; a metrics port already taken exits 2.

#include <sys/resource.h>

#include <chrono>
#include <string>
#include <thread>

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

TEST(DashboardLiveTest, ChromiumDrawsTheRunningJobAndBadRequestsChangeNothing) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 50);
  Process run({PstrainBin(),
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
               dir.File("m.pt")});
  int port = -1;
  // Until rank 0 listens and has evaluated twice: every chart has points.
  for (int i = 0; i < 3000; ++i) {
    const std::string out = run.OutSoFar();
    port = Rank0MetricsPort(out);
    if (port > 0 && FindEvents(out, "eval").size() >= 2)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(port, 0) << run.OutSoFar();
  SendBadRequests(port);
  // The workers' heartbeats (every second) bring their progress.
  std::this_thread::sleep_for(std::chrono::seconds(2));
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
