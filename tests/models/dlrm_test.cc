#include "models/dlrm.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace pstrain::models {
namespace {

TEST(DlrmTest, InitialisesAsTheReferenceAndShapesItsOutput) {
  DlrmOptions o;
  o.bottom = {64, 16};
  o.top = {32, 1};
  o.table_rows = {400, 9};
  torch::manual_seed(1);
  Dlrm model(o);
  auto params = model.named_parameters();
  // N(0, sqrt(2 / (13 + 64))) and U(-1/20, 1/20).
  EXPECT_NEAR(params["bot_l.0.weight"].std().item<double>(),
              std::sqrt(2.0 / 77), 0.01);
  EXPECT_LE(params["emb_l.0.weight"].abs().max().item<double>(), 0.05);
  EXPECT_GT(params["emb_l.0.weight"].abs().max().item<double>(), 0.045);
  // 16 + 3 pairs of the 3 vectors.
  EXPECT_EQ(params["top_l.0.weight"].size(1), 19);
  EXPECT_FALSE(params.contains("top_l.1.weight"));
  EXPECT_TRUE(params.contains("top_l.2.weight"));
  const torch::Tensor out =
      model.Forward(torch::zeros({5, 13}), torch::zeros({5, 2}, torch::kLong));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5}));
  EXPECT_EQ(DlrmOptions::KaggleTableRows().size(), 26u);
}

}  // namespace
}  // namespace pstrain::models
