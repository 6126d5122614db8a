#include "ps/store/checkpoint.h"

#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_zoo.h"
#include "testing/idx_files.h"

namespace pstrain::ps {
namespace {

using data::testing::ScratchDir;

TEST(CheckpointTest, MetaPathReplacesTheExtension) {
  EXPECT_EQ(CheckpointMetaPath("a/model.pt"), "a/model.json");
  EXPECT_EQ(CheckpointMetaPath("m.pth"), "m.json");
  EXPECT_EQ(CheckpointMetaPath("m"), "m.json");
}

TEST(CheckpointTest, RoundTripKeepsNamesOrderAndValues) {
  ScratchDir dir;
  NamedTensors t = {{"b.weight", torch::randn({3, 2})},
                    {"a.bias", torch::arange(5, torch::kInt64)}};
  ASSERT_TRUE(SaveCheckpoint(dir.File("m.pt"), t, {{"version", 9}}).ok());
  auto back = LoadCheckpointTensors(dir.File("m.pt"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].first, "b.weight");
  EXPECT_TRUE(torch::equal((*back)[0].second, t[0].second));
  EXPECT_TRUE(torch::equal((*back)[1].second, t[1].second));
  auto meta = LoadCheckpointMeta(dir.File("m.pt"));
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ((*meta)["version"], 9);
}

TEST(CheckpointTest, AliasesFollowTheirKeyAndShareItsTensor) {
  ScratchDir dir;
  NamedTensors t = {{"encoder.weight", torch::randn({4, 2})},
                    {"rnn.weight", torch::randn({2, 2})},
                    {"decoder.bias", torch::zeros({4})}};
  NamedTensors with = WithAliases(
      t, {{"decoder.weight", "encoder.weight"}, {"x", "no.such.key"}});
  ASSERT_EQ(with.size(), 4u);
  EXPECT_EQ(with[1].first, "decoder.weight");
  EXPECT_TRUE(with[1].second.is_same(t[0].second));
  EXPECT_EQ(with[2].first, "rnn.weight");
  ASSERT_TRUE(SaveCheckpoint(dir.File("m.pt"), with, {}).ok());
  auto loaded = LoadCheckpointTensors(dir.File("m.pt"));
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 4u);
  EXPECT_TRUE(torch::equal((*loaded)[1].second, t[0].second));
}

TEST(CheckpointTest, GarbageIsCorruptionAndMissingIsNotFound) {
  ScratchDir dir;
  std::ofstream(dir.File("bad.pt")) << "not a zip";
  Status s = LoadCheckpointTensors(dir.File("bad.pt")).status();
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("bad.pt"), std::string::npos);
  EXPECT_EQ(LoadCheckpointTensors(dir.File("none.pt")).status().code(),
            StatusCode::kNotFound);
}

TEST(CheckpointTest, OptimizerStatePathReplacesTheExtension) {
  EXPECT_EQ(OptimizerStatePath("a/model.pt"), "a/model.optim.pt");
  EXPECT_EQ(OptimizerStatePath("m.pth"), "m.optim.pt");
  EXPECT_EQ(OptimizerStatePath("m"), "m.optim.pt");
  EXPECT_EQ(OptimizerStatePath("a/model.pt", 1, 2), "a/model.optim-1-of-2.pt");
}

// Adam's moments and step counts come back: one more step on the original
// and on a fresh optimizer loaded from the file gives identical parameters.
TEST(CheckpointTest, OptimizerStateRoundTripRestoresAdam) {
  ScratchDir dir;
  torch::manual_seed(1);
  torch::nn::Linear a(4, 3), b(4, 3);
  torch::optim::Adam adam_a(a->parameters(), torch::optim::AdamOptions(0.1));
  auto step = [](torch::nn::Linear& m, torch::optim::Optimizer& opt, int seed) {
    torch::manual_seed(seed);
    opt.zero_grad();
    m->forward(torch::randn({5, 4})).pow(2).sum().backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i)
    step(a, adam_a, 10 + i);
  ASSERT_TRUE(SaveOptimizerState(dir.File("m.pt"), {&adam_a}).ok());
  {
    torch::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  torch::optim::Adam adam_b(b->parameters(), torch::optim::AdamOptions(0.1));
  Status s = LoadOptimizerState(dir.File("m.pt"), {&adam_b});
  ASSERT_TRUE(s.ok()) << s.ToString();
  step(a, adam_a, 20);
  step(b, adam_b, 20);
  EXPECT_TRUE(torch::equal(a->weight, b->weight));
  EXPECT_TRUE(torch::equal(a->bias, b->bias));

  // Without the state, Adam's first step differs: the test can fail.
  torch::nn::Linear c(4, 3);
  {
    torch::NoGradGuard no_grad;
    c->weight.copy_(b->weight);
  }
  torch::optim::Adam adam_c(c->parameters(), torch::optim::AdamOptions(0.1));
  step(a, adam_a, 21);
  step(c, adam_c, 21);
  EXPECT_FALSE(torch::allclose(a->weight, c->weight));
}

// A server with --server_threads has one optimizer per group of keys.
TEST(CheckpointTest, SeveralOptimizersRoundTripAsGroups) {
  ScratchDir dir;
  torch::manual_seed(2);
  torch::nn::Linear a(4, 3), b(4, 3);
  torch::optim::SGD w(std::vector<at::Tensor>{a->weight},
                      torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::Adam bias(std::vector<at::Tensor>{a->bias},
                          torch::optim::AdamOptions(0.1));
  a->forward(torch::randn({5, 4})).pow(2).sum().backward();
  w.step();
  bias.step();
  ASSERT_TRUE(SaveOptimizerState(dir.File("g.pt"), {&w, &bias}).ok());
  torch::optim::SGD w2(std::vector<at::Tensor>{b->weight},
                       torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::Adam bias2(std::vector<at::Tensor>{b->bias},
                           torch::optim::AdamOptions(0.1));
  Status s = LoadOptimizerState(dir.File("g.pt"), {&w2, &bias2});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto& buf =
      static_cast<torch::optim::SGDParamState&>(*w2.state().begin()->second);
  EXPECT_TRUE(torch::equal(buf.momentum_buffer(), a->weight.grad()));
  auto& adam = static_cast<torch::optim::AdamParamState&>(
      *bias2.state().begin()->second);
  EXPECT_EQ(adam.step(), 1);
  // Saved as two groups, read as one: refused, naming the file.
  torch::optim::SGD one(b->parameters(), torch::optim::SGDOptions(0.1));
  s = LoadOptimizerState(dir.File("g.pt"), {&one});
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("g.optim.pt"), std::string::npos) << s.message();
}

TEST(CheckpointTest, LoadOptimizerStateNamesAMissingFile) {
  ScratchDir dir;
  torch::nn::Linear a(2, 2);
  torch::optim::SGD sgd(a->parameters(), torch::optim::SGDOptions(0.1));
  Status s = LoadOptimizerState(dir.File("none.pt"), {&sgd});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("none.optim.pt"), std::string::npos)
      << s.message();
}

TEST(CheckpointTest, LoadIntoParametersNamesAMismatchedParameter) {
  NamedTensors saved = {{"w", torch::ones({2, 3})}};
  at::Tensor w = torch::zeros({2, 3});
  ASSERT_TRUE(LoadIntoParameters(saved, {{"w", w}}, "m.pt").ok());
  EXPECT_TRUE(torch::equal(w, torch::ones({2, 3})));
  Status shape =
      LoadIntoParameters(saved, {{"w", torch::zeros({3, 2})}}, "m.pt");
  EXPECT_EQ(shape.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shape.message().find("'w' has another shape"), std::string::npos);
  Status name = LoadIntoParameters(saved, {{"v", w}}, "m.pt");
  EXPECT_NE(name.message().find("m.pt has no parameter 'v'"),
            std::string::npos);
}

}  // namespace
}  // namespace pstrain::ps
