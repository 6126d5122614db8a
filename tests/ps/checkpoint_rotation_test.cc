#include "ps/checkpoint_rotation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <torch/torch.h>

#include "ps/checkpoint.h"
#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

using Clock = std::chrono::steady_clock;

TEST(CheckpointRotationTest, ParsesStepsAndSeconds) {
  EXPECT_EQ(ParseCheckpointEvery("100")->steps, 100u);
  EXPECT_EQ(ParseCheckpointEvery("2.5s")->time, std::chrono::milliseconds(2500));
  for (const char* bad : {"", "0", "-3", "1.5", "s", "0s", "10m"}) {
    auto r = ParseCheckpointEvery(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseCheckpointEvery("x").status().message(),
            "--checkpoint_every 'x': expected N (steps, >= 1) or Ns (seconds, > 0)");
}

TEST(CheckpointRotationTest, VersionedPaths) {
  EXPECT_EQ(VersionedCheckpointPath("d/model.pt", 120), "d/model-v000000120.pt");
  EXPECT_EQ(VersionedCheckpointPath("model.pth", 7), "model-v000000007.pth");
  EXPECT_EQ(VersionedCheckpointPath("model", 7), "model-v000000007.pt");
}

TEST(CheckpointRotationTest, DueEveryNStepsOrSeconds) {
  CheckpointRotation steps("m.pt", {3, {}}, 2);
  const auto t0 = Clock::now();
  EXPECT_FALSE(steps.Due(1, t0));
  EXPECT_FALSE(steps.Due(2, t0));
  EXPECT_TRUE(steps.Due(3, t0));
  CheckpointRotation time("m.pt", {0, std::chrono::milliseconds(1000)}, 2);
  EXPECT_FALSE(time.Due(5, Clock::now()));
  EXPECT_TRUE(time.Due(5, Clock::now() + std::chrono::seconds(2)));
}

// Saves versions 1..5 keeping 2; an incomplete newest one (no optimizer
// state, as after a kill mid-save) is neither listed nor kept from pruning.
TEST(CheckpointRotationTest, KeepsTheNewestCompleteOnes) {
  data::testing::ScratchDir dir;
  const std::string base = dir.File("m.pt");
  CheckpointRotation rotation(base, {1, {}}, 2);
  auto w = torch::ones({2, 3});
  torch::optim::SGD sgd({torch::zeros({2}, torch::requires_grad())}, 0.1);
  for (uint64_t v = 1; v <= 5; ++v) {
    const std::string path = rotation.PathFor(v);
    ASSERT_TRUE(SaveCheckpoint(path, {{"w", w * double(v)}}, {{"version", v}}).ok());
    ASSERT_TRUE(SaveOptimizerState(path, {&sgd}).ok());
    ASSERT_TRUE(rotation.Saved(v, Clock::now()).ok());
  }
  ASSERT_TRUE(SaveCheckpoint(rotation.PathFor(6), {{"w", w}}, {{"version", 6}}).ok());
  auto complete = CompleteCheckpoints(base);
  ASSERT_EQ(complete.size(), 2u);
  EXPECT_EQ(complete[0].first, 4u);
  EXPECT_EQ(complete[1].first, 5u);
  EXPECT_EQ(complete[1].second, rotation.PathFor(5));
  EXPECT_FALSE(std::filesystem::exists(rotation.PathFor(3)));
  EXPECT_FALSE(std::filesystem::exists(OptimizerStatePath(rotation.PathFor(3))));
  // A torn .pt (as if renamed half-written, which atomic writes prevent) is
  // not complete either.
  std::ofstream(rotation.PathFor(5), std::ios::trunc) << "torn";
  EXPECT_EQ(CompleteCheckpoints(base).size(), 1u);
}

}  // namespace
}  // namespace pstrain::ps
