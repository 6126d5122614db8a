#include "models/loss.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::models {
namespace {

TEST(LossTest, NamesParseBack) {
  for (Loss l : {Loss::kCrossEntropy, Loss::kNll, Loss::kMse}) {
    auto parsed = ParseLoss(LossName(l));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, l);
  }
  auto bad = ParseLoss("hinge");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--loss 'hinge': expected cross_entropy, nll or mse");
}

TEST(LossTest, ComputesPyTorchsFormulas) {
  const torch::Tensor logits =
      torch::tensor({{1.0f, 2.0f, 0.5f}, {0.0f, -1.0f, 3.0f}});
  const torch::Tensor y = torch::tensor({1, 2}, torch::kInt64);
  // -log softmax at the labels, averaged by hand.
  const auto logp = logits.log_softmax(1);
  const double ce =
      -(logp[0][1].item<double>() + logp[1][2].item<double>()) / 2;
  EXPECT_NEAR(ComputeLoss(Loss::kCrossEntropy, logits, y).item<double>(), ce,
              1e-6);
  EXPECT_NEAR(ComputeLoss(Loss::kNll, logp, y).item<double>(), ce, 1e-6);
  EXPECT_NEAR(
      ComputeLoss(Loss::kNll, logp, y, at::Reduction::Sum).item<double>(),
      2 * ce, 1e-6);
  const torch::Tensor target = torch::zeros({2, 3});
  EXPECT_NEAR(ComputeLoss(Loss::kMse, logits, target).item<double>(),
              logits.pow(2).mean().item<double>(), 1e-6);
}

TEST(LossTest, TargetsThatDoNotFitAreNamed) {
  const torch::Tensor out = torch::zeros({2, 3});
  EXPECT_TRUE(CheckTarget(Loss::kCrossEntropy, out,
                          torch::tensor({0, 2}, torch::kInt64))
                  .ok());
  EXPECT_TRUE(CheckTarget(Loss::kMse, out, torch::ones({2, 3})).ok());
  EXPECT_EQ(
      CheckTarget(Loss::kCrossEntropy, out, torch::ones({2, 3})).message(),
      "--loss cross_entropy needs int64 class indices y [B] (a float y "
      "is a regression target: --loss mse); y is float32 [2, 3]");
  EXPECT_EQ(CheckTarget(Loss::kMse, out, torch::tensor({0, 1}, torch::kInt64))
                .message(),
            "--loss mse needs a float target of the output's shape [2, 3]; "
            "y is int64 [2]");
  EXPECT_EQ(CheckTarget(Loss::kMse, out, torch::ones({2, 4})).message(),
            "--loss mse needs a float target of the output's shape [2, 3]; "
            "y is float32 [2, 4]");
  EXPECT_EQ(CheckTarget(Loss::kNll, out, torch::tensor({0, 3}, torch::kInt64))
                .message(),
            "--loss nll: y holds classes 0..3, the output scores 3");
  EXPECT_EQ(CheckTarget(Loss::kNll, torch::zeros({2}),
                        torch::tensor({0, 1}, torch::kInt64))
                .message(),
            "--loss nll needs an output of class scores [B, C] for y [2]; the "
            "output is [2]");
}

}  // namespace
}  // namespace pstrain::models
