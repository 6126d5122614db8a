#include "models/evaluator.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_zoo.h"

namespace pstrain::models {
namespace {

std::shared_ptr<Model> Seeded(const std::string& name, uint64_t seed) {
  torch::manual_seed(seed);
  auto model = MakeModel(name);
  PS_CHECK(model.ok()) << model.status().ToString();
  return *model;
}

NamedTensors StateOf(Model& model) {
  NamedTensors state;
  for (const auto& item : model.named_parameters()) {
    state.emplace_back(item.key(), item.value().detach().clone());
  }
  return state;
}

struct Set {
  torch::Tensor images, labels;
};

Set RandomSet(int64_t n) {
  torch::manual_seed(7);
  return {torch::randn({n, 1, 28, 28}),
          torch::randint(0, 10, {n}, torch::kInt64)};
}

// The reference: the whole set in one forward, NCHW, autograd off.
EvalResult Reference(Model& model, const Set& set) {
  torch::NoGradGuard no_grad;
  model.eval();
  auto out = model.forward(set.images);
  EvalResult r;
  r.samples = set.labels.size(0);
  r.accuracy = out.argmax(1).eq(set.labels).sum().item<double>() / r.samples;
  r.loss = torch::nll_loss(out, set.labels).item<double>();
  return r;
}

TEST(EvaluatorTest, EveryBatchSizeScoresAsOneForward) {
  const Set set = RandomSet(203);
  auto reference_model = Seeded("net", 3);
  const EvalResult want = Reference(*reference_model, set);
  for (int64_t batch : {1, 7, 64, 0, 1000}) {
    Evaluator evaluator(Seeded("net", 3), set.images, set.labels, {batch});
    const EvalResult got = evaluator.Score();
    EXPECT_EQ(got.samples, 203);
    EXPECT_DOUBLE_EQ(got.accuracy, want.accuracy) << "batch " << batch;
    EXPECT_NEAR(got.loss, want.loss, 1e-5) << "batch " << batch;
  }
}

TEST(EvaluatorTest, ScoresTheStateItIsGivenNotItsOwn) {
  const Set set = RandomSet(100);
  auto trained = Seeded("net", 11);
  const EvalResult want = Reference(*trained, set);
  Evaluator evaluator(Seeded("net", 12), set.images, set.labels);
  const EvalResult before = evaluator.Score();
  auto got = evaluator.Score(StateOf(*trained));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_NE(before.loss, got->loss);
  EXPECT_DOUBLE_EQ(got->accuracy, want.accuracy);
  EXPECT_NEAR(got->loss, want.loss, 1e-5);
}

TEST(EvaluatorTest, ChannelsLastKeepsTheValues) {
  auto model = Seeded("net", 5);
  const NamedTensors before = StateOf(*model);
  const Set set = RandomSet(10);
  Evaluator evaluator(model, set.images, set.labels);
  size_t i = 0;
  for (const auto& item : model->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), before[i++].second)) << item.key();
    if (item.value().dim() == 4) {
      EXPECT_TRUE(item.value().is_contiguous(at::MemoryFormat::ChannelsLast))
          << item.key();
    }
  }
}

TEST(EvaluatorTest, RefusesAStateThatDoesNotFit) {
  const Set set = RandomSet(10);
  Evaluator evaluator(Seeded("mlp", 1), set.images, set.labels);
  NamedTensors state = StateOf(*Seeded("mlp", 2));
  NamedTensors missing(state.begin() + 1, state.end());
  Status s = evaluator.Load(missing);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "the state has no 'fc1.weight'");
  state[1].second = torch::zeros({3});
  s = evaluator.Load(state);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'fc1.bias' is [3], the model's [256]");
}

TEST(EvaluatorTest, AutoBatchHoldsSixtyFourSmallImages) {
  EXPECT_EQ(AutoBatchSize(torch::zeros({10, 1, 28, 28})), 64);
  EXPECT_EQ(AutoBatchSize(torch::zeros({10, 3, 32, 32})), 16);
  EXPECT_EQ(AutoBatchSize(torch::zeros({2, 3, 224, 224})), 1);
  EXPECT_EQ(AutoBatchSize(torch::zeros({10, 784})), 64);
}

}  // namespace
}  // namespace pstrain::models
