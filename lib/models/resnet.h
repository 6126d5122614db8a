#pragma once
// ResNet: torchvision's resnet18, resnet34 and resnet50
// (torchvision/models/resnet.py, ResNet v1.5; He et al., "Deep Residual
// Learning for Image Recognition", CVPR 2016), with torchvision's
// architecture, initialization and state_dict names, so that a checkpoint
// loads into torchvision.models.resnetNN(num_classes=K) with strict=True:
//   conv1, bn1, [maxpool], layer1..layer4 (Sequential of blocks "0", "1", ...,
//   see resnet_blocks.h), adaptive average pool to 1x1, flatten, fc,
//   log_softmax(dim 1).
// Two stems (ResNetStem()):
//   "imagenet" for image_size > 64: conv1 7x7 stride 2 padding 3, bn1, relu,
//     max-pool 3x3 stride 2 padding 1 (torchvision's);
//   "cifar" for image_size <= 64: conv1 3x3 stride 1 padding 1, bn1, relu,
//     no max-pool (He et al. section 4.2's CIFAR-10 stem; torchvision's model
//     with m.conv1 = nn.Conv2d(C, 64, 3, 1, 1, bias=False) and
//     m.maxpool = nn.Identity() has the same state_dict).
// Initialization as torchvision's (zero_init_residual=False): every
// convolution kaiming_normal_(mode fan_out, relu), every BatchNorm weight 1
// and bias 0, fc as nn.Linear's default (kaiming_uniform_(a=sqrt(5)) weight,
// uniform(+-1/sqrt(fan_in)) bias). State (models/model_state.h): every
// parameter and BatchNorm's running_mean, running_var, num_batches_tracked.
// Not thread-safe, like any torch::nn::Module.

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "models/model.h"
#include "models/model_zoo.h"
#include "models/resnet_blocks.h"

namespace pstrain::models {

/// Images of at most this many pixels a side get the CIFAR stem.
inline constexpr int64_t kCifarStemMaxImageSize = 64;

/// The stem a ResNet built for `input` uses: "cifar" when
/// input.image_size <= kCifarStemMaxImageSize (3x3 stride-1 conv1, no
/// max-pool), otherwise "imagenet" (7x7 stride-2 conv1 and a 3x3 stride-2
/// max-pool). For logs and reports.
const char* ResNetStem(const InputShape& input);

class ResNet : public Model {
 public:
  enum class Block { kBasic, kBottleneck };

  /// Blocks per stage (layer1..layer4): resnet18 {2,2,2,2} basic,
  /// resnet34 {3,4,6,3} basic, resnet50 {3,4,6,3} bottleneck.
  /// REQUIRES: input.channels, input.image_size, input.num_classes >= 1 and
  /// every entry of `blocks` >= 1. Draws the parameters from torch's global
  /// generator.
  ResNet(Block block, const std::array<int, 4>& blocks,
         const InputShape& input);

  /// x: float32 [B,input.channels,H,W] (any H, W >= 1; input.image_size
  /// chose the stem only). Returns log-probabilities, float32
  /// [B,input.num_classes]. BatchNorm uses the batch's statistics and
  /// updates its running ones in train() mode, uses the running ones in
  /// eval(). libtorch throws c10::Error on a wrongly shaped input.
  torch::Tensor forward(torch::Tensor x) override;
  /// Model::Place's split.
  void Place(const std::vector<torch::Device>& devices) override;

  /// Whether this model has the CIFAR stem (see ResNetStem()).
  bool cifar_stem() const { return cifar_stem_; }

 private:
  void InitializeLikeTorchvision();

  bool cifar_stem_;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  std::array<torch::nn::Sequential, 4> layers_;
  torch::nn::Linear fc_{nullptr};
  // Every block of layer1..layer4, in order, as forward runs them.
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
};

/// torchvision's resnet18 / resnet34 / resnet50 for `input` (see ResNet).
std::shared_ptr<ResNet> MakeResNet18(const InputShape& input);
std::shared_ptr<ResNet> MakeResNet34(const InputShape& input);
std::shared_ptr<ResNet> MakeResNet50(const InputShape& input);

}  // namespace pstrain::models
