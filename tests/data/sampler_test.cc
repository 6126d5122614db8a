#include "data/sampler.h"

#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::data {
namespace {

constexpr int64_t kSamples = 103;
constexpr int kWorkers = 3;
constexpr int64_t kBatch = 4;
constexpr uint64_t kSeed = 42;

/// The batches of all kWorkers workers at (epoch, step), concatenated in
/// worker order: int64 [kWorkers * kBatch].
torch::Tensor AllWorkers(std::vector<ShardSampler>& samplers, int64_t epoch,
                         int64_t step) {
  std::vector<torch::Tensor> parts;
  for (ShardSampler& sampler : samplers) {
    parts.push_back(sampler.BatchIndices(epoch, step));
  }
  return torch::cat(parts);
}

std::vector<ShardSampler> MakeWorkers() {
  std::vector<ShardSampler> samplers;
  for (int w = 0; w < kWorkers; ++w) {
    samplers.emplace_back(kSamples, kWorkers, w, kBatch, kSeed);
  }
  return samplers;
}

TEST(ShardSamplerTest, StepsPerEpochIsFloor) {
  EXPECT_EQ(
      ShardSampler(kSamples, kWorkers, 0, kBatch, kSeed).steps_per_epoch(),
      8);  // 103 / 12
  EXPECT_EQ(ShardSampler(96, 3, 2, 4, kSeed).steps_per_epoch(), 8);
  EXPECT_EQ(ShardSampler(11, 3, 1, 4, kSeed).steps_per_epoch(), 0);
  EXPECT_EQ(ShardSampler(0, 1, 0, 1, kSeed).steps_per_epoch(), 0);
}

TEST(ShardSamplerTest, BatchIsInt64OfBatchSizeInRange) {
  ShardSampler sampler(kSamples, kWorkers, 1, kBatch, kSeed);
  torch::Tensor indices = sampler.BatchIndices(0, 7);
  EXPECT_EQ(indices.scalar_type(), torch::kInt64);
  EXPECT_EQ(indices.sizes(), torch::IntArrayRef({kBatch}));
  EXPECT_GE(indices.min().item<int64_t>(), 0);
  EXPECT_LT(indices.max().item<int64_t>(), kSamples);
}

TEST(ShardSamplerTest, WorkersAreDisjointOverAnEpoch) {
  std::vector<ShardSampler> samplers = MakeWorkers();
  std::vector<torch::Tensor> steps;
  for (int64_t step = 0; step < samplers[0].steps_per_epoch(); ++step) {
    steps.push_back(AllWorkers(samplers, /*epoch=*/2, step));
  }
  torch::Tensor seen = torch::cat(steps);
  EXPECT_EQ(seen.numel(), 8 * kWorkers * kBatch);
  EXPECT_EQ(torch::bincount(seen, {}, kSamples).max().item<int64_t>(), 1);
}

TEST(ShardSamplerTest, WorkersTogetherEqualOneProcessOfBigBatch) {
  std::vector<ShardSampler> samplers = MakeWorkers();
  ShardSampler single(kSamples, 1, 0, kWorkers * kBatch, kSeed);
  ASSERT_EQ(single.steps_per_epoch(), samplers[0].steps_per_epoch());
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    for (int64_t step = 0; step < single.steps_per_epoch(); ++step) {
      torch::Tensor together = AllWorkers(samplers, epoch, step);
      torch::Tensor alone = single.BatchIndices(epoch, step);
      EXPECT_TRUE(together.equal(alone))
          << "epoch " << epoch << " step " << step;
      EXPECT_TRUE(std::get<0>(torch::sort(together))
                      .equal(std::get<0>(torch::sort(alone))));
    }
  }
}

TEST(ShardSamplerTest, EpochsDifferAndSeedsRepeat) {
  ShardSampler a(kSamples, 1, 0, kSamples, kSeed);
  ShardSampler b(kSamples, 1, 0, kSamples, kSeed);
  ShardSampler other_seed(kSamples, 1, 0, kSamples, kSeed + 1);
  torch::Tensor epoch0 = a.BatchIndices(0, 0);
  torch::Tensor epoch1 = a.BatchIndices(1, 0);
  EXPECT_FALSE(epoch0.equal(epoch1));
  EXPECT_TRUE(std::get<0>(torch::sort(epoch0)).equal(torch::arange(kSamples)));
  EXPECT_TRUE(b.BatchIndices(1, 0).equal(epoch1));
  EXPECT_TRUE(b.BatchIndices(0, 0).equal(epoch0));
  EXPECT_TRUE(a.BatchIndices(0, 0).equal(epoch0));  // back to an old epoch
  EXPECT_FALSE(other_seed.BatchIndices(0, 0).equal(epoch0));
}

TEST(ShardSamplerTest, DoesNotTouchTheGlobalGenerator) {
  torch::manual_seed(7);
  torch::Tensor expected = torch::rand({4});
  torch::manual_seed(7);
  ShardSampler sampler(kSamples, kWorkers, 0, kBatch, kSeed);
  (void)sampler.BatchIndices(0, 0);
  EXPECT_TRUE(torch::rand({4}).equal(expected));
}

TEST(ShardSamplerDeathTest, BadArgumentsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // torch starts threads
  EXPECT_DEATH(ShardSampler(10, 2, 2, 1, kSeed), "worker_index");
  EXPECT_DEATH(ShardSampler(10, 0, 0, 1, kSeed), "num_workers");
  EXPECT_DEATH(ShardSampler(10, 1, 0, 0, kSeed), "batch_size");
  ShardSampler sampler(10, 2, 0, 2, kSeed);
  EXPECT_DEATH((void)sampler.BatchIndices(0, 2), "step 2 of 2");
  EXPECT_DEATH((void)sampler.BatchIndices(-1, 0), "epoch");
}

}  // namespace
// --reassign_shards: parts of the global batch cover exactly the slices of
// every worker, in order, whatever the number of parts.
TEST(ShardSamplerTest, GlobalBatchPartsCoverTheGlobalBatch) {
  ShardSampler w0(100, 3, 0, 4, 9), w1(100, 3, 1, 4, 9), w2(100, 3, 2, 4, 9);
  auto global = torch::cat(
      {w0.BatchIndices(1, 2), w1.BatchIndices(1, 2), w2.BatchIndices(1, 2)});
  for (int parts : {1, 2, 3, 5}) {
    std::vector<torch::Tensor> pieces;
    for (int p = 0; p < parts; ++p)
      pieces.push_back(w1.GlobalBatchPart(1, 2, p, parts));
    EXPECT_TRUE(torch::equal(torch::cat(pieces), global)) << parts << " parts";
  }
  EXPECT_EQ(w0.GlobalBatchPart(1, 2, 1, 2).size(0), 6);
}

}  // namespace pstrain::data
