// pstrain report on two real short runs, sync and async, loaded in headless
// Chromium: every chart laid out the points of both runs (the staleness
// histogram: the async run's only), read back from the page's #drawn.

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/headless_chromium.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;
using nlohmann::json;

// Runs a 40-step launch of `mode` on `dir`'s tiny data set and writes its
// JSON Lines to dir/<mode>.jsonl.
std::string RunJob(const ScratchDir& dir, const std::string& mode) {
  auto r = RunPstrain({"launch",     "--world_size",   "3",  "--master_port",
                       "0",          "--mode",         mode, "--model",
                       "mlp",        "--batch_size",   "8",  "--max_steps",
                       "40",         "--log_interval", "1",  "--eval_interval",
                       "10",         "--threads",      "1",  "--json",
                       "--data_dir", dir.path()},
                      180);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string path = dir.File(mode + ".jsonl");
  std::ofstream(path) << r.out;
  return path;
}

TEST(ReportTest, ChromiumDrawsEveryChartOfBothRuns) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 50);
  const std::string sync = RunJob(dir, "sync");
  const std::string async = RunJob(dir, "async");
  const std::string html = dir.File("report.html");
  auto r = RunPstrain({"report", sync, async, "-o", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto dom = DumpDom("file://" + html, 5000);
  ASSERT_TRUE(dom.ok()) << dom.status().ToString();
  const json drawn = json::parse(ElementText(*dom, "drawn"), nullptr, false);
  ASSERT_TRUE(drawn.is_object()) << ElementText(*dom, "drawn");
  const json both = {"sync", "async"};
  // 2 runs x 2 workers, about 20 steps each (the log thins none).
  for (const char* chart : {"loss", "throughput"}) {
    EXPECT_EQ(drawn[chart]["runs"], both) << chart << ": " << drawn;
    EXPECT_EQ(drawn[chart]["series"], 4) << chart;
    EXPECT_GE(drawn[chart]["points"].get<int>(), 4 * 10) << chart;
  }
  // Evaluations every 10 versions and the final score, per run.
  EXPECT_EQ(drawn["eval"]["runs"], both) << drawn;
  EXPECT_EQ(drawn["eval"]["series"], 2);
  EXPECT_GE(drawn["eval"]["points"].get<int>(), 2 * 3);
  // Compute, communication and waiting of 2 workers, per run.
  EXPECT_EQ(drawn["times"]["runs"], both) << drawn;
  EXPECT_EQ(drawn["times"]["series"], 6);
  EXPECT_EQ(drawn["times"]["points"], 2 * 3 * 2);
  EXPECT_EQ(drawn["staleness"]["runs"], json({"async"})) << drawn;
  EXPECT_GE(drawn["staleness"]["points"].get<int>(), 1);
  EXPECT_EQ(drawn["flags"]["runs"], 2);
  EXPECT_GE(drawn["flags"]["rows"].get<int>(), 10);
}

TEST(ReportTest, BadInputIsOneErrorLineAndExitStatus2) {
  ScratchDir dir;
  std::ofstream(dir.File("empty.jsonl")) << "not pstrain\n";
  for (const std::string& run :
       {dir.File("absent.jsonl"), dir.File("empty.jsonl")}) {
    auto r = RunPstrain({"report", run, "-o", dir.File("r.html")}, 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("pstrain: error: " + run + ": ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  std::ofstream(dir.File("one.jsonl"))
      << R"({"event":"step","rank":1,"role":"worker","time":1,"loss":2})"
      << "\n";
  auto r = RunPstrain({"report", dir.File("one.jsonl"), "--dygraphs_dir",
                       dir.File("none"), "-o", dir.File("r.html")},
                      30);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("libjs-dygraphs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pstrain::testing
