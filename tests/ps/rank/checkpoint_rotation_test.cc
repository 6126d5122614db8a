#include "ps/rank/checkpoint_rotation.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

TEST(CheckpointRotationTest, VersionedPaths) {
  EXPECT_EQ(VersionedCheckpointPath("d/model.pt", 120),
            "d/model-v000000120.pt");
  EXPECT_EQ(VersionedCheckpointPath("model.pth", 7), "model-v000000007.pth");
  EXPECT_EQ(VersionedCheckpointPath("model", 7), "model-v000000007.pt");
}

// Saves versions 1..5 keeping 2; an incomplete newest one (no optimizer
// state, as after a kill mid-save) is neither listed nor kept from pruning.
TEST(CheckpointRotationTest, KeepsTheNewestCompleteOnes) {
  data::testing::ScratchDir dir;
  const std::string base = dir.File("m.pt");
  auto path_for = [&](uint64_t v) { return VersionedCheckpointPath(base, v); };
  auto w = torch::ones({2, 3});
  torch::optim::SGD sgd({torch::zeros({2}, torch::requires_grad())}, 0.1);
  for (uint64_t v = 1; v <= 5; ++v) {
    const std::string path = path_for(v);
    ASSERT_TRUE(
        SaveCheckpoint(path, {{"w", w * double(v)}}, {{"version", v}}).ok());
    ASSERT_TRUE(SaveOptimizerState(path, {&sgd}).ok());
    ASSERT_TRUE(RemoveOldCheckpoints(base, 2).ok());
  }
  ASSERT_TRUE(SaveCheckpoint(path_for(6), {{"w", w}}, {{"version", 6}}).ok());
  auto complete = CompleteCheckpoints(base);
  ASSERT_EQ(complete.size(), 2u);
  EXPECT_EQ(complete[0].first, 4u);
  EXPECT_EQ(complete[1].first, 5u);
  EXPECT_EQ(complete[1].second, path_for(5));
  EXPECT_FALSE(std::filesystem::exists(path_for(3)));
  EXPECT_FALSE(std::filesystem::exists(OptimizerStatePath(path_for(3))));
  // A torn .pt (as if renamed half-written, which atomic writes prevent) is
  // not complete either.
  std::ofstream(path_for(5), std::ios::trunc) << "torn";
  EXPECT_EQ(CompleteCheckpoints(base).size(), 1u);
}

// A checkpoint of a job of 2 servers is complete only with both servers'
// optimizer states, which SaveJobCheckpoint writes before the .json.
TEST(CheckpointRotationTest, SeveralServersCompleteOnlyWithEveryPart) {
  data::testing::ScratchDir dir;
  const std::string base = dir.File("m.pt");
  const std::string path = VersionedCheckpointPath(base, 7);
  const nlohmann::json meta = {{"version", 7}, {"job", {{"num_servers", 2}}}};
  ASSERT_TRUE(
      SaveJobCheckpoint(path, {{"w", torch::ones({2})}}, {"a", "b"}, meta)
          .ok());
  EXPECT_TRUE(std::filesystem::exists(OptimizerStatePath(path, 0, 2)));
  EXPECT_TRUE(std::filesystem::exists(OptimizerStatePath(path, 1, 2)));
  ASSERT_EQ(CompleteCheckpoints(base).size(), 1u);
  std::filesystem::remove(OptimizerStatePath(path, 1, 2));
  EXPECT_TRUE(CompleteCheckpoints(base).empty());
}

}  // namespace
}  // namespace pstrain::ps
