// Process tests of --placement server (the RPC tutorial's scheme: the model
// on the server, workers send batches) and --num_gpus: sync is the same
// computation as worker placement, async steps on every batch, and GPUs
// the machine lacks are refused with the count it has.

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "job_test.h"
#include "models/model_zoo.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"

namespace pstrain::testing {
namespace {

using data::testing::ScratchDir;

constexpr int kSteps = 20;

std::vector<std::string> Job(const ScratchDir& dir, const std::string& mode,
                             const std::string& placement,
                             const std::string& checkpoint) {
  return {"launch",
          "--world_size",
          "3",
          "--master_port",
          "0",
          "--model",
          "mlp",
          "--mode",
          mode,
          "--placement",
          placement,
          "--batch_size",
          "8",
          "--max_steps",
          std::to_string(kSteps),
          "--lr",
          "0.05",
          "--seed",
          "3",
          "--data_dir",
          dir.path(),
          "--checkpoint",
          dir.File(checkpoint),
          "--json"};
}

// The server running every worker's batch and
// averaging their gradients is what workers computing them are.
TEST(PlacementTest, SyncOnTheServerEqualsSyncOnTheWorkers) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto workers = RunPstrain(Job(dir, "sync", "worker", "worker.pt"), 120);
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  auto server = RunPstrain(Job(dir, "sync", "server", "server.pt"), 120);
  ASSERT_EQ(server.exit_code, 0) << server.err;
  EXPECT_EQ(FindEvent(server.out, "summary")["steps"], kSteps) << server.out;
  EXPECT_LT(MaxAbsDiff(dir.File("worker.pt"), dir.File("server.pt")), 1e-5);
  // The test can fail: 20 steps moved the parameters far beyond 1e-5.
  torch::manual_seed(3);
  auto init = models::MakeModel("mlp");
  ASSERT_TRUE(init.ok());
  ps::NamedTensors initial;
  for (const auto& item : (*init)->named_parameters())
    initial.emplace_back(item.key(), item.value().detach());
  ASSERT_TRUE(ps::SaveCheckpoint(dir.File("initial.pt"), initial, {}).ok());
  EXPECT_GT(MaxAbsDiff(dir.File("server.pt"), dir.File("initial.pt")), 1e-3);
}

TEST(PlacementTest, AsyncOnTheServerStepsOnEveryBatch) {
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 640, 100);
  auto r = RunPstrain(Job(dir, "async", "server", "async.pt"), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two workers' batches, each a version.
  EXPECT_EQ(FindEvent(r.out, "summary")["steps"], 2 * kSteps) << r.out;
}

// More GPUs than the machine has are refused, with
// the count it sees.
TEST(PlacementTest, MoreGpusThanTheMachineHasAreRefused) {
  const auto seen =
      torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  if (seen >= 2)
    GTEST_SKIP() << "this machine has " << seen << " GPUs";
  const std::string asked = std::to_string(seen + 1);
  ScratchDir dir;
  data::testing::WriteTinyDataset(dir.path(), 64, 10);
  for (const std::string placement : {"worker", "server"}) {
    auto r =
        RunPstrain({"launch", "--world_size", "2", "--master_port", "0",
                    "--num_gpus", asked, "--placement", placement, "--data_dir",
                    dir.path(), "--checkpoint", dir.File("m.pt")},
                   60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const std::string want =
        seen == 0 ? "--num_gpus 1: this libtorch has no CUDA, or no GPU is "
                    "visible (it sees 0 GPUs)"
                  : "--num_gpus 2: this machine has 1 CUDA GPU";
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  }
  auto r = RunPstrain({"launch", "--num_gpus", "3"}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--num_gpus"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pstrain::testing
