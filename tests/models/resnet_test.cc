#include "models/resnet.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/model_state.h"
#include "models/model_zoo.h"

namespace pstrain::models {
namespace {

std::shared_ptr<Model> MustMake(const std::string& name,
                                const InputShape& input, uint64_t seed = 1) {
  torch::manual_seed(seed);
  Result<std::shared_ptr<Model>> model = MakeModel(name, input);
  PS_CHECK(model.ok()) << model.status().ToString();
  return *model;
}

std::map<std::string, torch::Tensor> StateByName(const Model& model) {
  std::map<std::string, torch::Tensor> out;
  for (const StateTensor& s : ModelState(model))
    out[s.name] = s.value;
  return out;
}

int64_t ParameterCount(const Model& model) {
  int64_t count = 0;
  for (const auto& p : model.parameters())
    count += p.numel();
  return count;
}

struct Known {
  std::string name;
  int64_t parameters;   // torchvision's, for 1000 classes
  size_t batch_norms;   // stem + blocks + downsamples
  size_t convolutions;  // the same, counting convs
};

// torchvision's numbers: sum(p.numel() for p in resnetNN().parameters()).
const std::vector<Known>& KnownResNets() {
  static const auto* known = new std::vector<Known>{
      {"resnet18", 11689512, 1 + 8 * 2 + 3, 1 + 8 * 2 + 3},
      {"resnet34", 21797672, 1 + 16 * 2 + 3, 1 + 16 * 2 + 3},
      {"resnet50", 25557032, 1 + 16 * 3 + 4, 1 + 16 * 3 + 4},
  };
  return *known;
}

class ResNetKnownTest : public ::testing::TestWithParam<Known> {};

TEST_P(ResNetKnownTest, CountsMatchTorchvision) {
  const Known& k = GetParam();
  std::shared_ptr<Model> model = MustMake(k.name, {3, 224, 1000});
  EXPECT_EQ(ParameterCount(*model), k.parameters);
  const std::vector<StateTensor> state = ModelState(*model);
  // Each BatchNorm: weight, bias, 3 buffers; each conv: weight; fc: 2.
  EXPECT_EQ(state.size(), k.batch_norms * 5 + k.convolutions + 2);
  EXPECT_EQ(model->named_buffers().size(), k.batch_norms * 3);
  for (const StateTensor& s : state) {
    const bool counter =
        s.name.size() > 19 &&
        s.name.substr(s.name.size() - 19) == "num_batches_tracked";
    EXPECT_EQ(s.value.scalar_type(), counter ? torch::kInt64 : torch::kFloat32)
        << s.name;
    EXPECT_EQ(s.is_buffer,
              counter || s.name.find("running_") != std::string::npos)
        << s.name;
  }
}

TEST_P(ResNetKnownTest, OneThousandClassesAtTenGiveTheSameTrunk) {
  std::shared_ptr<Model> a = MustMake(GetParam().name, {3, 224, 1000});
  std::shared_ptr<Model> b = MustMake(GetParam().name, {3, 224, 10});
  const int64_t fc_in = GetParam().name == "resnet50" ? 2048 : 512;
  EXPECT_EQ(ParameterCount(*a) - ParameterCount(*b), 990 * (fc_in + 1));
}

INSTANTIATE_TEST_SUITE_P(Torchvision, ResNetKnownTest,
                         ::testing::ValuesIn(KnownResNets()),
                         [](const ::testing::TestParamInfo<Known>& info) {
                           return info.param.name;
                         });

TEST(ResNetStateTest, StateDictOrderAndNames) {
  std::shared_ptr<Model> model = MustMake("resnet18", {3, 224, 10});
  std::vector<std::string> names;
  for (const StateTensor& s : ModelState(*model))
    names.push_back(s.name);
  const std::vector<std::string> head = {
      "conv1.weight",
      "bn1.weight",
      "bn1.bias",
      "bn1.running_mean",
      "bn1.running_var",
      "bn1.num_batches_tracked",
      "layer1.0.conv1.weight",
      "layer1.0.bn1.weight",
      "layer1.0.bn1.bias",
      "layer1.0.bn1.running_mean",
      "layer1.0.bn1.running_var",
      "layer1.0.bn1.num_batches_tracked",
      "layer1.0.conv2.weight",
      "layer1.0.bn2.weight",
  };
  ASSERT_GT(names.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 14), head);
  EXPECT_EQ(names.size(), 122u);  // torchvision's len(resnet18().state_dict())
  EXPECT_EQ(names[names.size() - 2], "fc.weight");
  EXPECT_EQ(names.back(), "fc.bias");
  // The shortcut comes after the block's last BatchNorm, as registered.
  auto at = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) - names.begin();
  };
  EXPECT_EQ(at("layer2.0.downsample.0.weight"),
            at("layer2.0.bn2.num_batches_tracked") + 1);
  EXPECT_EQ(at("layer2.0.downsample.1.weight"),
            at("layer2.0.downsample.0.weight") + 1);
  EXPECT_EQ(at("layer2.1.conv1.weight"),
            at("layer2.0.downsample.1.num_batches_tracked") + 1);
  EXPECT_EQ(at("layer1.0.downsample.0.weight"), names.size());  // none
}

TEST(ResNetStateTest, ShapesMatchTorchvision) {
  const std::map<std::string, std::vector<int64_t>> r18 = {
      {"conv1.weight", {64, 3, 7, 7}},
      {"layer2.0.conv1.weight", {128, 64, 3, 3}},
      {"layer2.0.downsample.0.weight", {128, 64, 1, 1}},
      {"layer4.1.bn2.running_var", {512}},
      {"layer4.1.bn2.num_batches_tracked", {}},
      {"fc.weight", {1000, 512}},
      {"fc.bias", {1000}},
  };
  const std::map<std::string, std::vector<int64_t>> r50 = {
      {"layer1.0.conv1.weight", {64, 64, 1, 1}},
      {"layer1.0.conv3.weight", {256, 64, 1, 1}},
      {"layer1.0.downsample.0.weight", {256, 64, 1, 1}},
      {"layer2.0.conv1.weight", {128, 256, 1, 1}},
      {"layer2.0.conv2.weight", {128, 128, 3, 3}},
      {"layer4.2.conv3.weight", {2048, 512, 1, 1}},
      {"layer4.2.bn3.running_mean", {2048}},
      {"fc.weight", {1000, 2048}},
  };
  using Shapes = std::map<std::string, std::vector<int64_t>>;
  const std::vector<std::pair<std::string, Shapes>> cases = {{"resnet18", r18},
                                                             {"resnet50", r50}};
  for (const auto& [name, want] : cases) {
    auto state = StateByName(*MustMake(name, {3, 224, 1000}));
    for (const auto& [key, sizes] : want) {
      ASSERT_EQ(state.count(key), 1u) << name << " " << key;
      EXPECT_EQ(state[key].sizes(), torch::IntArrayRef(sizes))
          << name << " " << key;
    }
  }
}

// v1.5: resnet50 strides the 3x3 convolution, not the first 1x1.
TEST(ResNetStateTest, BottleneckStridesTheThreeByThree) {
  auto model =
      std::dynamic_pointer_cast<ResNet>(MustMake("resnet50", {3, 224, 10}));
  ASSERT_NE(model, nullptr);
  for (const auto& item : model->named_modules()) {
    if (item.key() != "layer2.0.conv1" && item.key() != "layer2.0.conv2")
      continue;
    auto* conv = item.value()->as<torch::nn::Conv2d>();
    ASSERT_NE(conv, nullptr);
    const int64_t want = item.key() == "layer2.0.conv2" ? 2 : 1;
    EXPECT_EQ((*conv->options.stride())[0], want) << item.key();
  }
}

}  // namespace
}  // namespace pstrain::models
