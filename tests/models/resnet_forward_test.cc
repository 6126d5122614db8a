// ResNet's stems, forward passes, running statistics and initialization.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "keys_on_demand.h"
#include "models/model_state.h"
#include "models/model_zoo.h"
#include "models/resnet.h"

namespace pstrain::models {
namespace {

std::shared_ptr<ResNet> MustMake(const std::string& name,
                                 const InputShape& input, uint64_t seed = 1) {
  torch::manual_seed(seed);
  Result<std::shared_ptr<Model>> model = MakeModel(name, input);
  PS_CHECK(model.ok()) << model.status().ToString();
  auto resnet = std::dynamic_pointer_cast<ResNet>(*model);
  PS_CHECK(resnet != nullptr) << name;
  return resnet;
}

torch::Tensor Named(const torch::nn::Module& m, const std::string& name) {
  for (const StateTensor& s : ModelState(m)) {
    if (s.name == name)
      return s.value;
  }
  ADD_FAILURE() << "no " << name;
  return {};
}

torch::nn::Module& Child(torch::nn::Module& m, const std::string& name) {
  for (const auto& item : m.named_modules()) {
    if (item.key() == name)
      return *item.value();
  }
  PS_CHECK(false) << "no module " << name;
  return m;
}

void ExpectLogProbabilities(const torch::Tensor& out, int64_t batch,
                            int64_t classes) {
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  ASSERT_EQ(out.sizes(), torch::IntArrayRef({batch, classes}));
  EXPECT_TRUE(out.exp().sum(1).allclose(torch::ones({batch}), 1e-5, 1e-5));
  EXPECT_LE(out.max().item<float>(), 0.0f);
}

TEST(ResNetStemTest, CifarStemUpToSixtyFourPixels) {
  EXPECT_STREQ(ResNetStem({3, 32, 10}), "cifar");
  EXPECT_STREQ(ResNetStem({1, 28, 10}), "cifar");
  EXPECT_STREQ(ResNetStem({3, 64, 10}), "cifar");
  EXPECT_STREQ(ResNetStem({3, 65, 10}), "imagenet");
  EXPECT_STREQ(ResNetStem({3, 224, 10}), "imagenet");
}

TEST(ResNetStemTest, CifarStemKeepsThirtyTwoPixels) {
  auto model = MustMake("resnet18", {3, 32, 10});
  EXPECT_TRUE(model->cifar_stem());
  EXPECT_EQ(Named(*model, "conv1.weight").sizes(),
            torch::IntArrayRef({64, 3, 3, 3}));
  model->eval();
  torch::NoGradGuard no_grad;
  auto& conv1 = Child(*model, "conv1");
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  EXPECT_EQ(conv1.as<torch::nn::Conv2d>()->forward(x).sizes(),
            torch::IntArrayRef({2, 64, 32, 32}));
  ExpectLogProbabilities(model->forward(x), 2, 10);
}

TEST(ResNetStemTest, ImageNetStemHalvesTwoHundredTwentyFourPixels) {
  auto model = MustMake("resnet18", {3, 224, 10});
  EXPECT_FALSE(model->cifar_stem());
  EXPECT_EQ(Named(*model, "conv1.weight").sizes(),
            torch::IntArrayRef({64, 3, 7, 7}));
  model->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({1, 3, 224, 224});
  EXPECT_EQ(Child(*model, "conv1").as<torch::nn::Conv2d>()->forward(x).sizes(),
            torch::IntArrayRef({1, 64, 112, 112}));
  ExpectLogProbabilities(model->forward(x), 1, 10);
}

// Fashion-MNIST: one channel, 28 px, the CIFAR stem.
TEST(ResNetStemTest, OneChannelTwentyEightPixels) {
  for (const char* name : {"resnet18", "resnet34", "resnet50"}) {
    auto model = MustMake(name, {1, 28, 10});
    EXPECT_TRUE(model->cifar_stem()) << name;
    EXPECT_EQ(Named(*model, "conv1.weight").sizes(),
              torch::IntArrayRef({64, 1, 3, 3}));
    model->eval();
    torch::NoGradGuard no_grad;
    ExpectLogProbabilities(model->forward(torch::randn({3, 1, 28, 28})), 3, 10);
  }
}

TEST(ResNetForwardTest, TrainForwardAndBackwardReachEveryParameter) {
  auto model = MustMake("resnet18", {3, 32, 7});
  torch::Tensor out = model->forward(torch::randn({4, 3, 32, 32}));
  ExpectLogProbabilities(out.detach(), 4, 7);
  torch::nll_loss(out, torch::tensor({0, 1, 5, 6}, torch::kInt64)).backward();
  for (const auto& item : model->named_parameters()) {
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(item.value().grad().abs().sum().item<float>(), 0) << item.key();
  }
}

TEST(ResNetForwardTest, TrainModeUpdatesRunningStatisticsEvalDoesNot) {
  auto model = MustMake("resnet50", {3, 32, 10});
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 3, 32, 32}) * 3 + 1;
  model->forward(x);
  for (const char* bn :
       {"bn1", "layer1.0.bn3", "layer4.2.bn2", "layer3.0.downsample.1"}) {
    const std::string p = std::string(bn) + ".";
    EXPECT_EQ(Named(*model, p + "num_batches_tracked").item<int64_t>(), 1)
        << bn;
    EXPECT_GT(Named(*model, p + "running_mean").abs().sum().item<float>(), 0)
        << bn;
    const torch::Tensor var = Named(*model, p + "running_var");
    EXPECT_FALSE(var.equal(torch::ones_like(var))) << bn;
  }
  // Momentum 0.1 from (0, 1): running_mean is a tenth of the batch mean.
  const torch::Tensor conv1 =
      Child(*model, "conv1").as<torch::nn::Conv2d>()->forward(x);
  EXPECT_TRUE(Named(*model, "bn1.running_mean")
                  .allclose(0.1 * conv1.mean({0, 2, 3}), 1e-4, 1e-5));
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& b : model->buffers())
    before.push_back(b.clone());
  model->eval();
  model->forward(x);
  const auto after = model->buffers();
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(before[i].equal(after[i])) << i;
}

// torchvision's init: kaiming_normal_(fan_out, relu) convolutions, BN 1/0,
// fc as nn.Linear (uniform within 1/sqrt(fan_in)).
TEST(ResNetInitTest, StatisticsMatchTorchvision) {
  auto model = MustMake("resnet50", {3, 224, 10});
  for (const StateTensor& s : ModelState(*model)) {
    const torch::Tensor& w = s.value;
    if (w.dim() == 4) {
      const double fan_out = w.size(0) * w.size(2) * w.size(3);
      const double want = std::sqrt(2.0 / fan_out);
      const double tolerance = 5.0 / std::sqrt(static_cast<double>(w.numel()));
      EXPECT_NEAR(w.std().item<double>() / want, 1.0, tolerance) << s.name;
      EXPECT_NEAR(w.mean().item<double>() / want, 0.0, tolerance) << s.name;
    } else if (s.name.find("fc.") == 0) {
      const double bound = 1 / std::sqrt(2048.0);
      EXPECT_LE(w.abs().max().item<double>(), bound) << s.name;
      if (w.dim() == 2) {  // 20,480 draws reach near the bound
        EXPECT_GT(w.abs().max().item<double>(), 0.99 * bound) << s.name;
      }
    } else if (s.name.find(".weight") != std::string::npos ||
               s.name.find("running_var") != std::string::npos) {
      EXPECT_TRUE(w.eq(1).all().item<bool>()) << s.name;
    } else {
      EXPECT_TRUE(w.eq(0).all().item<bool>()) << s.name;  // bias, mean, count
    }
  }
}

TEST(ResNetInitTest, SameSeedSameState) {
  auto a = MustMake("resnet18", {3, 32, 10}, 7);
  auto b = MustMake("resnet18", {3, 32, 10}, 7);
  auto c = MustMake("resnet18", {3, 32, 10}, 8);
  const auto va = StateValues(*a), vb = StateValues(*b), vc = StateValues(*c);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_TRUE(va[i].equal(vb[i])) << i;
  EXPECT_FALSE(va[0].equal(vc[0]));
}

// Forward asks for each block's keys before it uses them: parameters that
// are NaN until asked for must never reach the output. The keys are
// Model::set_await's (model.h): ModelState order, parameters and buffers.
TEST(ResNetForwardTest, AwaitsTheStemEachBlockAndFcBeforeUsingThem) {
  auto reference = MustMake("resnet18", {1, 28, 10}, 4);
  auto model = MustMake("resnet18", {1, 28, 10}, 4);
  const KeysOnDemandRun run =
      ForwardWithKeysOnDemand(*model, *reference, torch::randn({2, 1, 28, 28}));
  EXPECT_TRUE(run.same_output);
  // conv1, bn1, 8 blocks, fc.
  ASSERT_EQ(run.asked.size(), 11u);
  EXPECT_TRUE(std::is_sorted(run.asked.begin(), run.asked.end()));
  EXPECT_EQ(run.asked[0], 1u) << "conv1 waits for its weight only";
  EXPECT_EQ(run.asked.back(), run.keys);
}

}  // namespace
}  // namespace pstrain::models
