// Several servers (--num_servers): each holds a share of the parameters'
// bytes, and sync training computes exactly what one server computes.

#include <tuple>

#include <gtest/gtest.h>

#include "job_test.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// (optimizer, num_servers, slice_bytes).
class ShardedSyncTest
    : public ::testing::TestWithParam<std::tuple<std::string, int, int>> {};

TEST_P(ShardedSyncTest, SameParametersAsOneServer) {
  const auto& [optimizer, servers, slice_bytes] = GetParam();
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto run = [&](int num_servers, const std::string& out) {
    auto r = RunPstrain({"launch",
                         "--world_size",
                         std::to_string(num_servers + 2),
                         "--num_servers",
                         std::to_string(num_servers),
                         "--slice_bytes",
                         std::to_string(slice_bytes),
                         "--model",
                         "mlp",
                         "--optimizer",
                         optimizer,
                         "--lr",
                         optimizer == "adam" ? "0.001" : "0.05",
                         "--batch_size",
                         "8",
                         "--max_steps",
                         "20",
                         "--seed",
                         "3",
                         "--master_port",
                         "0",
                         "--data_dir",
                         dir.path(),
                         "--json",
                         "--checkpoint",
                         dir.File(out)},
                        120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FindEvent(r.out, "summary");
  };
  auto one = run(1, "one.pt");
  auto many = run(servers, "many.pt");
  EXPECT_EQ(many["num_servers"], servers);
  EXPECT_EQ(many["steps"], 20);
  EXPECT_LT(many["shard_imbalance"].get<double>(), 1.25);
  EXPECT_LT(MaxAbsDiff(dir.File("one.pt"), dir.File("many.pt")), 1e-6);
  EXPECT_EQ(many["test_accuracy"], one["test_accuracy"]);
  // Both runs trained: the checkpoints are far from a 1-step run's.
  auto r = RunPstrain(
      {"launch", "--world_size", "3", "--model", "mlp", "--max_steps", "1",
       "--seed", "3", "--master_port", "0", "--data_dir", dir.path(), "--json",
       "--checkpoint", dir.File("short.pt")},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(MaxAbsDiff(dir.File("many.pt"), dir.File("short.pt")), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, ShardedSyncTest,
    ::testing::Values(std::make_tuple("sgd", 2, 512 * 1024),
                      std::make_tuple("adam", 2, 512 * 1024),
                      std::make_tuple("sgd", 3, 64 * 1024)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" +
             std::to_string(std::get<1>(info.param)) + "_servers";
    });

// --server_threads: each server steps disjoint groups of keys in parallel;
// the result is bit for bit that of one thread, with two servers too.
TEST(ShardingTest, ServerThreadsComputeWhatOneThreadComputes) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto run = [&](int servers, int threads, const std::string& out) {
    auto r = RunPstrain({"launch",
                         "--world_size",
                         std::to_string(servers + 2),
                         "--num_servers",
                         std::to_string(servers),
                         "--server_threads",
                         std::to_string(threads),
                         "--model",
                         "mlp",
                         "--optimizer",
                         "adam",
                         "--lr",
                         "0.001",
                         "--batch_size",
                         "8",
                         "--max_steps",
                         "10",
                         "--master_port",
                         "0",
                         "--data_dir",
                         dir.path(),
                         "--json",
                         "--checkpoint",
                         dir.File(out)},
                        120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  run(1, 1, "one.pt");
  run(1, 3, "three.pt");
  run(2, 2, "two_by_two.pt");
  EXPECT_EQ(MaxAbsDiff(dir.File("one.pt"), dir.File("three.pt")), 0.0);
  EXPECT_LT(MaxAbsDiff(dir.File("one.pt"), dir.File("two_by_two.pt")), 1e-6);
}

TEST(ShardingTest, ServersRunAsSeparateProcesses) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto world = [&](const std::string& port) {
    return std::vector<std::string>{
        "--world_size", "4", "--num_servers", "2",        "--master_port", port,
        "--threads",    "1", "--data_dir",    dir.path(), "--json"};
  };
  Process s0(Concat({PstrainBin(), "serve", "--rank", "0", "--model", "mlp",
                     "--max_steps", "10", "--checkpoint", dir.File("m.pt")},
                    world("0")));
  const std::string port = std::to_string(s0.ListenPort(30));
  Process s1(Concat({PstrainBin(), "serve", "--rank", "1"}, world(port)));
  Process w2(Concat({PstrainBin(), "work", "--rank", "2"}, world(port)));
  Process w3(Concat({PstrainBin(), "work", "--rank", "3"}, world(port)));
  auto r0 = s0.Wait(120);
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  EXPECT_EQ(s1.Wait(30).exit_code, 0);
  EXPECT_EQ(w2.Wait(30).exit_code, 0);
  EXPECT_EQ(w3.Wait(30).exit_code, 0);
  auto summary = FindEvent(r0.out, "summary");
  EXPECT_EQ(summary["steps"], 10);
  EXPECT_EQ(summary["samples"], 2 * 10 * 32);
}

TEST(ShardingTest, RankZeroNamesTheServersAndWorkersItWaitsFor) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  // Nobody connects: the port the kernel picks is never needed.
  Process s0({PstrainBin(), "serve", "--rank", "0", "--world_size", "3",
              "--num_servers", "2", "--master_port", "0", "--timeout", "3",
              "--data_dir", dir.path(), "--checkpoint", dir.File("m.pt")});
  auto r = s0.Wait(60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("waiting for ranks 1, 2 to connect"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pstrain::testing
