#include "models/model_zoo.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "keys_on_demand.h"

namespace pstrain::models {
namespace {

struct ZooCase {
  std::string name;
  int64_t num_parameters;
  std::vector<std::string> parameter_names;
};

const std::vector<ZooCase>& Cases() {
  static const auto* cases = new std::vector<ZooCase>{
      {"net",
       1199882,
       {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}},
      {"convnet", 1960, {"conv1.weight", "conv1.bias", "fc.weight", "fc.bias"}},
      {"mlp", 203530, {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}},
  };
  return *cases;
}

std::shared_ptr<Model> MustMake(const std::string& name) {
  Result<std::shared_ptr<Model>> model = MakeModel(name);
  PS_CHECK(model.ok()) << model.status().ToString();
  return *model;
}

class ModelZooTest : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ModelZooTest, ParameterCountAndNames) {
  std::shared_ptr<Model> model = MustMake(GetParam().name);
  int64_t count = 0;
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) {
    names.push_back(item.key());
    count += item.value().numel();
    EXPECT_EQ(item.value().scalar_type(), torch::kFloat32) << item.key();
  }
  EXPECT_EQ(count, GetParam().num_parameters);
  EXPECT_EQ(names, GetParam().parameter_names);
}

TEST_P(ModelZooTest, ForwardGivesLogProbabilities) {
  torch::manual_seed(1);
  std::shared_ptr<Model> model = MustMake(GetParam().name);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor out = model->forward(torch::randn({5, 1, 28, 28}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  ASSERT_EQ(out.sizes(), torch::IntArrayRef({5, 10}));
  EXPECT_TRUE(out.exp().sum(1).allclose(torch::ones({5}), 1e-5, 1e-5));
  EXPECT_LE(out.max().item<float>(), 0.0f);
}

TEST_P(ModelZooTest, TrainModeForwardAndBackward) {
  torch::manual_seed(2);
  std::shared_ptr<Model> model = MustMake(GetParam().name);
  torch::Tensor out = model->forward(torch::randn({3, 1, 28, 28}));
  torch::nll_loss(out, torch::tensor({0, 4, 9}, torch::kInt64)).backward();
  for (const auto& item : model->named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_EQ(item.value().grad().sizes(), item.value().sizes());
  }
}

// Forward asks for each layer's keys before it uses them: parameters that
// are NaN until asked for must never reach the output.
TEST_P(ModelZooTest, ForwardAwaitsEachLayerBeforeUsingIt) {
  torch::manual_seed(4);
  std::shared_ptr<Model> reference = MustMake(GetParam().name);
  std::shared_ptr<Model> model = MustMake(GetParam().name);
  const KeysOnDemandRun run =
      ForwardWithKeysOnDemand(*model, *reference, torch::randn({4, 1, 28, 28}));
  EXPECT_TRUE(run.same_output);
  ASSERT_GE(run.asked.size(), 2u);
  EXPECT_TRUE(std::is_sorted(run.asked.begin(), run.asked.end()));
  EXPECT_LT(run.asked.front(), run.keys)
      << "the first layer waits only for its own keys";
  EXPECT_EQ(run.asked.back(), run.keys);
}

TEST_P(ModelZooTest, SameSeedSameParameters) {
  torch::manual_seed(123);
  std::shared_ptr<Model> a = MustMake(GetParam().name);
  torch::manual_seed(123);
  std::shared_ptr<Model> b = MustMake(GetParam().name);
  torch::manual_seed(124);
  std::shared_ptr<Model> c = MustMake(GetParam().name);
  std::vector<torch::Tensor> pa = a->parameters();
  std::vector<torch::Tensor> pb = b->parameters();
  std::vector<torch::Tensor> pc = c->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(pa[i].equal(pb[i])) << i;
  }
  EXPECT_FALSE(pa[0].equal(pc[0]));
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelZooTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           return info.param.name;
                         });

TEST(ModelZooNamesTest, ListsModelsDefaultFirst) {
  EXPECT_EQ(ModelNames(),
            (std::vector<std::string>{"net", "convnet", "mlp", "resnet18",
                                      "resnet34", "resnet50", "lstm_lm"}));
}

TEST(ModelZooNamesTest, UnknownNameIsInvalidArgument) {
  Result<std::shared_ptr<Model>> model = MakeModel("resnet");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "unknown model 'resnet'; expected one of: net, convnet, mlp, "
            "resnet18, resnet34, resnet50, lstm_lm");
}

TEST(ModelZooShapeTest, MnistModelsRefuseOtherShapes) {
  for (const char* name : {"net", "convnet", "mlp"}) {
    Result<std::shared_ptr<Model>> model = MakeModel(name, {3, 32, 10});
    ASSERT_FALSE(model.ok()) << name;
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(model.status().message(),
              std::string("model '") + name +
                  "' takes 1x28x28 in 10 classes; the data set has 3x32x32 "
                  "in 10 classes (use resnet18, resnet34 or resnet50)");
    EXPECT_FALSE(MakeModel(name, {1, 28, 100}).ok()) << name;
    EXPECT_FALSE(MakeModel(name, {1, 32, 10}).ok()) << name;
    EXPECT_TRUE(MakeModel(name, {1, 28, 10}).ok()) << name;
  }
}

TEST(ModelZooShapeTest, ResNetsTakeAnyShapeButAnEmptyOne) {
  EXPECT_TRUE(MakeModel("resnet18", {3, 32, 100}).ok());
  EXPECT_TRUE(MakeModel("resnet18", {1, 28, 10}).ok());
  for (const InputShape& bad :
       {InputShape{0, 32, 10}, InputShape{3, 0, 10}, InputShape{3, 32, 0}}) {
    Result<std::shared_ptr<Model>> model = MakeModel("resnet18", bad);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("resnet18"), std::string::npos)
        << model.status().message();
  }
}

}  // namespace
}  // namespace pstrain::models
