// A process test: a pstrain lstm_lm's checkpoint loads into Debian's
// python3-torch copy of pytorch/examples' RNNModel (lstm_lm_torch.py beside
// this file), and both give the same outputs and state for one input.

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/lstm_lm.h"
#include "models/model_state.h"
#include "ps/store/checkpoint.h"
#include "testing/idx_files.h"
#include "testing/process.h"

namespace pstrain::models {
namespace {

using data::testing::ScratchDir;

class LstmLmTorchTest : public ::testing::TestWithParam<bool> {};

TEST_P(LstmLmTorchTest, CheckpointLoadsAndOutputsMatch) {
  const bool tie = GetParam();
  LstmLmOptions o;
  o.vocab_size = 50;
  o.embed_dim = 16;
  o.hidden_dim = tie ? 16 : 24;
  o.num_layers = 2;
  o.dropout = 0.3;
  o.tie_weights = tie;
  torch::manual_seed(7);
  LstmLm model(o);
  model.eval();
  const torch::Tensor x =
      torch::randint(0, o.vocab_size, {5, 3}, torch::kInt64);
  const LmState state = {torch::randn({2, 3, o.hidden_dim}) * 0.5,
                         torch::randn({2, 3, o.hidden_dim}) * 0.5};
  torch::NoGradGuard no_grad;
  auto [want, next] = model.Forward(x, state);

  ScratchDir dir;
  ps::NamedTensors saved;
  std::string names;
  for (const StateTensor& s : ModelState(model)) {
    saved.emplace_back(s.name, s.value);
    names += s.name + "\n";
  }
  if (tie)
    names.insert(names.find("decoder.bias"), "decoder.weight\n");
  const std::string ckpt = dir.File("model.pt"), in = dir.File("input.pt"),
                    out = dir.File("output.pt");
  // As the servers save it: a tied weight under both names.
  ASSERT_TRUE(
      ps::SaveCheckpoint(ckpt, ps::WithAliases(saved, StateAliases(model)), {})
          .ok());
  ASSERT_TRUE(
      ps::SaveCheckpoint(
          in,
          {{"input", x}, {"h", std::get<0>(state)}, {"c", std::get<1>(state)}},
          {})
          .ok());
  auto r =
      pstrain::testing::Process(
          {"/usr/bin/python3",
           std::string(PSTRAIN_SOURCE_DIR) + "/tests/models/lstm_lm_torch.py",
           std::to_string(o.vocab_size), std::to_string(o.embed_dim),
           std::to_string(o.hidden_dim), std::to_string(o.num_layers),
           tie ? "1" : "0", ckpt, in, out})
          .Wait(300);
  ASSERT_EQ(r.exit_code, 0) << "load failed?\n" << r.err;
  EXPECT_EQ(r.out, names) << "RNNModel's state_dict order";

  Result<ps::NamedTensors> got = ps::LoadCheckpointTensors(out);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  ASSERT_EQ((*got)[0].first, "output");
  EXPECT_LE(((*got)[0].second - want).abs().max().item<double>(), 1e-4);
  EXPECT_LE(((*got)[1].second - std::get<0>(next)).abs().max().item<double>(),
            1e-4);
  EXPECT_LE(((*got)[2].second - std::get<1>(next)).abs().max().item<double>(),
            1e-4);
}

INSTANTIATE_TEST_SUITE_P(Tie, LstmLmTorchTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "tied" : "untied";
                         });

}  // namespace
}  // namespace pstrain::models
