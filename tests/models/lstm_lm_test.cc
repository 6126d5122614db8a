#include "models/lstm_lm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_state.h"
#include "models/model_zoo.h"

namespace pstrain::models {
namespace {

std::vector<std::string> Names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& s : ModelState(m))
    names.push_back(s.name);
  return names;
}

TEST(LstmLmTest, TheGuidesModelByDefault) {
  auto made = MakeModel("lstm_lm");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(Names(**made),
            (std::vector<std::string>{"encoder.weight", "rnn.weight_ih_l0",
                                      "rnn.weight_hh_l0", "rnn.bias_ih_l0",
                                      "rnn.bias_hh_l0", "decoder.weight",
                                      "decoder.bias"}));
  int64_t n = 0;
  for (const auto& v : StateValues(**made))
    n += v.numel();
  // Embedding 10001x256, LSTM 4*512*(256+512) + 2*4*512, Linear 512x10001.
  EXPECT_EQ(n, 10001 * 256 + 4 * 512 * 768 + 2 * 2048 + 512 * 10001 + 10001);
}

TEST(LstmLmTest, ShapesAndCarriedState) {
  LstmLmOptions o{30, 8, 12, 2, 0.0, false};
  torch::manual_seed(1);
  LstmLm m(o);
  auto x = torch::randint(0, 30, {7, 4}, torch::kInt64);
  auto [out, state] = m.Forward(x, m.InitState(4));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{28, 30}));
  EXPECT_EQ(std::get<0>(state).sizes(), (std::vector<int64_t>{2, 4, 12}));
  EXPECT_NEAR(out.exp().sum(1).mean().item<double>(), 1.0, 1e-5);
  // Two windows with the state carried are one window of both.
  auto [first, mid] = m.Forward(x.slice(0, 0, 3), m.InitState(4));
  auto [second, end] = m.Forward(x.slice(0, 3, 7), mid);
  EXPECT_TRUE(torch::allclose(torch::cat({first, second}), out, 1e-5, 1e-6));
  EXPECT_TRUE(m.forward(x).equal(out));
}

TEST(LstmLmTest, TiedWeightsAreOneKey) {
  LstmLmOptions o{30, 8, 8, 1, 0.0, true};
  LstmLm m(o);
  auto names = Names(m);
  EXPECT_EQ(names.front(), "encoder.weight");
  EXPECT_EQ(std::count(names.begin(), names.end(), "decoder.weight"), 0);
  EXPECT_EQ(names.back(), "decoder.bias");
  // The name left out is an alias, so that checkpoints are state_dicts.
  using Alias = std::pair<std::string, std::string>;
  EXPECT_EQ(StateAliases(m),
            std::vector<Alias>({{"decoder.weight", "encoder.weight"}}));
  EXPECT_TRUE(
      StateAliases(LstmLm(LstmLmOptions{30, 8, 8, 1, 0.0, false})).empty());
  LstmLmOptions bad{30, 8, 9, 1, 0.0, true};
  auto made = MakeModel("lstm_lm", {}, bad);
  EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain::models
