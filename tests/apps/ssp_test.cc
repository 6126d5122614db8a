// Stale Synchronous Parallel, proven from the server's own records: with one
// worker slowed on purpose, no worker computes more than --staleness steps
// ahead of the slowest, and the fast one does reach the bound.

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// The server's max_clock_gap for a run where rank 1 sleeps 15 ms a step.
int64_t MaxClockGap(const std::string& mode, int staleness) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 50);
  auto world = [&](const std::string& port) {
    return std::vector<std::string>{
        "--world_size", "3",        "--master_port", port,
        "--data_dir",   dir.path(), "--threads",     "1"};
  };
  Process serve(
      Concat({PstrainBin(), "serve", "--mode", mode, "--staleness",
              std::to_string(staleness), "--model", "mlp", "--batch_size", "8",
              "--max_steps", "30", "--json", "--checkpoint", dir.File("m.pt")},
             world("0")));
  const std::string port = std::to_string(serve.ListenPort(30));
  Process slow(
      Concat({PstrainTestingBin(), "work", "--rank", "1", "--delay_ms", "15"},
             world(port)));
  Process fast(Concat({PstrainBin(), "work", "--rank", "2"}, world(port)));
  auto r = serve.Wait(120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slow.Wait(30).exit_code, 0);
  EXPECT_EQ(fast.Wait(30).exit_code, 0);
  auto summary = FindEvent(r.out, "summary");
  EXPECT_EQ(summary["steps"], 60) << r.out;  // every push applied
  return summary["max_clock_gap"].get<int64_t>();
}

class SspTest : public ::testing::TestWithParam<int> {};

TEST_P(SspTest, NoWorkerRunsMoreThanStalenessAhead) {
  EXPECT_EQ(MaxClockGap("ssp", GetParam()), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Staleness, SspTest, ::testing::Values(0, 1, 4));

TEST(SspTest, AsyncHasNoBound) {
  EXPECT_GT(MaxClockGap("async", 0), 4);
}

}  // namespace
}  // namespace pstrain::testing
