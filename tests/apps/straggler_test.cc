// Straggler-proof sync: with backup workers or a step timeout a slow
// worker costs its own gradients, not everyone's time.

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// Rank 3 sleeps 300 ms before each of its steps (pstrain_testing's
// --delay_rank); the others take a few milliseconds per step.
nlohmann::json RunWithStraggler(const ScratchDir& dir, int steps,
                                const std::vector<std::string>& flags) {
  auto r = Process(Concat({PstrainTestingBin(),
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
                           "300"},
                          flags))
               .Wait(120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return FindEvent(r.out, "summary");
}

TEST(StragglerTest, BackupWorkerStepsWithoutTheSlowOne) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  // On a loaded machine rank 3 may start a second after the others, or its
  // first push may still be in time: the others run long enough (about a
  // second here) for it to push late at least once.
  auto summary = RunWithStraggler(dir, 500, {"--backup_workers", "1", "--epochs", "20"});
  EXPECT_EQ(summary["steps"], 500);
  // 500 steps waiting 300 ms each for rank 3 would take 150 s.
  EXPECT_LT(summary["wall_seconds"].get<double>(), 4.5);
  EXPECT_GE(summary["dropped_pushes"].get<int>(), 1);
  EXPECT_EQ(summary["timed_out_steps"], 0);
}

TEST(StragglerTest, StepTimeoutClosesStepsWithoutTheSlowOne) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto summary = RunWithStraggler(dir, 20, {"--step_timeout", "0.05"});
  EXPECT_EQ(summary["steps"], 20);
  EXPECT_LT(summary["wall_seconds"].get<double>(), 4.5);
  EXPECT_GE(summary["timed_out_steps"].get<int>(), 1);
  EXPECT_GE(summary["dropped_pushes"].get<int>(), 1);
}

TEST(StragglerTest, BackupWorkersOnlyInSyncMode) {
  auto r = RunPstrain({"launch", "--world_size", "4", "--mode", "async", "--backup_workers",
                       "1", "--master_port", "0"},
                      30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--backup_workers and --step_timeout: only with --mode sync"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pstrain::testing
