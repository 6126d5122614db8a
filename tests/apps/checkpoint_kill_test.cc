// SIGKILL a serving process while it writes a checkpoint every version, 20
// times, each run resuming with --resume auto: every checkpoint file left
// behind loads, and no run goes back before the newest complete checkpoint.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "job_test.h"
#include "ps/rank/checkpoint_rotation.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

// Fails the test unless every file of a versioned checkpoint in `dir` is
// whole: each .pt loads, each .json parses. Returns whether a temporary
// file was left, i.e. the kill came in the middle of a write.
bool ExpectNoHalfWrittenFile(const std::string& dir) {
  bool mid_write = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("m-v", 0) != 0)
      continue;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      mid_write = true;
      continue;
    }
    const std::string path = entry.path().string();
    if (name.size() > 9 && name.compare(name.size() - 9, 9, ".optim.pt") == 0) {
      EXPECT_GT(std::filesystem::file_size(path), 0u) << path;
    } else if (name.size() > 3 &&
               name.compare(name.size() - 3, 3, ".pt") == 0) {
      EXPECT_TRUE(ps::LoadCheckpointTensors(path).ok()) << path;
    } else if (name.size() > 5 &&
               name.compare(name.size() - 5, 5, ".json") == 0) {
      EXPECT_TRUE(
          ps::LoadCheckpointMeta(path.substr(0, path.size() - 5) + ".pt").ok())
          << path;
    }
  }
  return mid_write;
}

TEST(CheckpointKillTest, KillsDuringSavesNeverLeaveAHalfWrittenCheckpoint) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 320, 50);
  const std::string base = dir.File("m.pt");
  std::mt19937 rng(11);
  uint64_t newest = 0;
  int resumed = 0, mid_write = 0;
  for (int i = 0; i < 20; ++i) {
    auto world = [&](int port) {
      return std::vector<std::string>{"--world_size",  "2",
                                      "--master_addr", "127.0.0.1",
                                      "--master_port", std::to_string(port),
                                      "--data_dir",    dir.path(),
                                      "--timeout",     "10"};
    };
    Process serve(
        Concat({PstrainBin(), "serve", "--model", "mlp", "--batch_size", "8",
                "--epochs", "1000", "--checkpoint", base, "--checkpoint_every",
                "1", "--keep", "3", "--resume", "auto"},
               world(0)));
    Process work(Concat({PstrainBin(), "work", "--rank", "1"},
                        world(serve.ListenPort(30))));
    // Once this run has saved something new (so it is well into its loop
    // of training and saving), kill it at a random moment.
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      auto saved = ps::CompleteCheckpoints(base);
      if (!saved.empty() && saved.back().first > newest)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    serve.Signal(SIGKILL);
    work.Signal(SIGKILL);  // its reconnecting is not what this tests
    auto rs = serve.Wait(10);
    work.Wait(10);
    if (rs.err.find("--resume auto: " + dir.path()) != std::string::npos)
      ++resumed;
    mid_write += ExpectNoHalfWrittenFile(dir.path());
    auto complete = ps::CompleteCheckpoints(base);
    // --keep 3, plus one when the kill fell between a save and its pruning.
    EXPECT_LE(complete.size(), 4u);
    ASSERT_FALSE(complete.empty()) << "run " << i << " saved nothing\n"
                                   << rs.err;
    // Resumed from the newest, then saved more.
    EXPECT_GT(complete.back().first, newest) << "run " << i;
    newest = complete.back().first;
  }
  EXPECT_EQ(resumed, 19);  // every run but the first
  // Most kills land while a checkpoint is being written (one is saved every
  // version); how many left a temporary file shows it.
  std::cout << "kills in the middle of a write: " << mid_write << " of 20\n";
}

}  // namespace
}  // namespace pstrain::testing
