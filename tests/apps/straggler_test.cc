// Straggler-proof sync: with backup workers or a step timeout a slow
// worker costs its own gradients, not everyone's time.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// What a run with a straggler reports: rank 0's summary, and the steps each
// worker computed (from its own summary).
struct StragglerRun {
  nlohmann::json summary;
  std::map<int, int64_t> worker_steps;
};

// Rank 3 sleeps 300 ms before each of its steps (pstrain_testing's
// --delay_rank); the others take a few milliseconds per step. Whether the
// others waited for it shows in steps, not seconds: had they waited, every
// worker would have computed every step. Every worker holds 5 steps before
// the end until rank 3 has logged a step (its push went, late), however
// late it started and however fast the others are.
StragglerRun RunWithStraggler(const ScratchDir& dir, int steps,
                              const std::vector<std::string>& flags) {
  const std::string go = dir.File("go");
  Process p(Concat({PstrainTestingBin(),
                    "launch",
                    "--world_size",
                    "4",
                    "--model",
                    "mlp",
                    "--max_steps",
                    std::to_string(steps),
                    "--batch_size",
                    "8",
                    "--master_port",
                    "0",
                    "--data_dir",
                    dir.path(),
                    "--json",
                    "--checkpoint",
                    dir.File("m.pt"),
                    "--delay_rank",
                    "3",
                    "--delay_ms",
                    "300",
                    "--log_interval",
                    "1",
                    "--hold_before_step",
                    std::to_string(steps - 5),
                    "--hold_until",
                    go},
                   flags));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto rank3_stepped = [&p] {
    for (const auto& e : FindEvents(p.OutSoFar(), "step")) {
      if (e["rank"] == 3)
        return true;
    }
    return false;
  };
  while (!rank3_stepped() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(go).close();
  const ProcessResult r = p.Wait(120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  StragglerRun run{FindEvent(r.out, "summary"), {}};
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "summary" &&
        j.value("role", "") == "worker") {
      run.worker_steps[j["rank"].get<int>()] = j["steps"].get<int64_t>();
    }
  }
  EXPECT_EQ(run.worker_steps.size(), 3u) << r.out;
  return run;
}

// The slow rank 3 computed at most half the steps of the fastest worker.
void ExpectTheOthersWentOn(const StragglerRun& run) {
  const int64_t slow = run.worker_steps.count(3) ? run.worker_steps.at(3) : 0;
  int64_t fastest = 0;
  for (const auto& [rank, steps] : run.worker_steps)
    fastest = std::max(fastest, steps);
  EXPECT_LE(2 * slow, fastest)
      << "rank 3: " << slow << " steps, fastest: " << fastest;
}

TEST(StragglerTest, BackupWorkerStepsWithoutTheSlowOne) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  const StragglerRun run =
      RunWithStraggler(dir, 500, {"--backup_workers", "1", "--epochs", "20"});
  const auto& summary = run.summary;
  EXPECT_EQ(summary["steps"], 500);
  ExpectTheOthersWentOn(run);
  EXPECT_GE(summary["dropped_pushes"].get<int>(), 1);
  EXPECT_EQ(summary["timed_out_steps"], 0);
}

TEST(StragglerTest, StepTimeoutClosesStepsWithoutTheSlowOne) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  const StragglerRun run =
      RunWithStraggler(dir, 20, {"--step_timeout", "0.05"});
  const auto& summary = run.summary;
  EXPECT_EQ(summary["steps"], 20);
  ExpectTheOthersWentOn(run);
  EXPECT_GE(summary["timed_out_steps"].get<int>(), 1);
  EXPECT_GE(summary["dropped_pushes"].get<int>(), 1);
}

TEST(StragglerTest, BackupWorkersOnlyInSyncMode) {
  auto r = RunPstrain({"launch", "--world_size", "4", "--mode", "async",
                       "--backup_workers", "1", "--master_port", "0"},
                      30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("--backup_workers and --step_timeout: only with --mode sync"),
      std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pstrain::testing
