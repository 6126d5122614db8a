#include "models/ctr_metrics.h"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::models {
namespace {

TEST(CtrMetricsTest, AucCountsOrderedPairsAndHalfOfTies) {
  // Clicks score 0.9 and 0.4; non-clicks 0.8, 0.4, 0.1. Of the 6 pairs,
  // 0.9 beats all 3, 0.4 beats 0.1, ties 0.4 (one half), loses to 0.8.
  const auto scores = torch::tensor({0.9, 0.8, 0.4, 0.4, 0.1});
  const auto labels = torch::tensor({1, 0, 1, 0, 0});
  EXPECT_DOUBLE_EQ(Auc(scores, labels), 4.5 / 6);
  // Any monotone transform of the scores: the same.
  EXPECT_DOUBLE_EQ(Auc(torch::logit(scores), labels), 4.5 / 6);
  EXPECT_DOUBLE_EQ(
      Auc(torch::tensor({3.0, 2.0, 1.0}), torch::tensor({1, 1, 0})), 1.0);
  EXPECT_DOUBLE_EQ(Auc(torch::tensor({1.0, 2.0}), torch::tensor({1, 0})), 0.0);
  EXPECT_TRUE(
      std::isnan(Auc(torch::tensor({1.0, 2.0}), torch::tensor({1, 1}))));
}

TEST(CtrMetricsTest, AucOfAllTiedScoresIsOneHalf) {
  EXPECT_DOUBLE_EQ(Auc(torch::zeros({6}), torch::tensor({1, 0, 1, 0, 0, 1})),
                   0.5);
}

TEST(CtrMetricsTest, LogLossIsBinaryCrossEntropyOfTheLogits) {
  const auto logits = torch::tensor({2.0, -1.0, 0.0});
  const auto labels = torch::tensor({1.0, 1.0, 0.0});
  const double want = -(std::log(1 / (1 + std::exp(-2.0))) +
                        std::log(1 / (1 + std::exp(1.0))) + std::log(0.5)) /
                      3;
  EXPECT_NEAR(LogLoss(logits, labels), want, 1e-12);
  EXPECT_TRUE(
      std::isfinite(LogLoss(torch::tensor({1000.0}), torch::tensor({0.0}))));
  EXPECT_EQ(LogLoss(torch::zeros({0}), torch::zeros({0})), 0);
}

}  // namespace
}  // namespace pstrain::models
