#pragma once
// The residual blocks of torchvision's ResNets (torchvision/models/resnet.py,
// which follows He et al., "Deep Residual Learning for Image Recognition",
// CVPR 2016, with the v1.5 Bottleneck), with torchvision's module names so
// that a state_dict moves between the two:
//   BasicBlock: conv1 (3x3, stride), bn1, conv2 (3x3), bn2[, downsample]
//   Bottleneck: conv1 (1x1), bn1, conv2 (3x3, stride), bn2, conv3 (1x1),
//               bn3[, downsample]
// downsample is Sequential(0: conv 1x1 stride s, 1: BatchNorm2d), present when
// stride != 1 or the channel count changes. Convolutions have no bias;
// BatchNorm2d has eps 1e-5, momentum 0.1 and running statistics
// (running_mean, running_var, num_batches_tracked buffers). Not thread-safe,
// like any torch::nn::Module.

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/types.h>

namespace pstrain::models {

/// A bias-free 2-D convolution with torchvision's padding (kernel / 2).
torch::nn::Conv2d ResNetConv(int64_t in_channels, int64_t out_channels,
                             int64_t kernel, int64_t stride);

/// BatchNorm2d(channels) as torchvision's: eps 1e-5, momentum 0.1, affine,
/// tracking running statistics.
torch::nn::BatchNorm2d ResNetBatchNorm(int64_t channels);

/// One residual block: relu(branch(x) + shortcut(x)).
class ResidualBlock : public torch::nn::Module {
 public:
  /// x: float32 [B,in_channels,H,W]. Returns float32
  /// [B,out_channels,ceil(H/stride),ceil(W/stride)], non-negative.
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

/// ResNet-18/34's block: two 3x3 convolutions, out_channels = planes.
class BasicBlock : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 1;

  /// REQUIRES: in_channels, planes, stride >= 1.
  BasicBlock(int64_t in_channels, int64_t planes, int64_t stride);

  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // null when not needed
};

/// ResNet-50's block, v1.5: 1x1 (planes), 3x3 (planes, stride), 1x1
/// (4 * planes); out_channels = 4 * planes. The original paper strides
/// the first 1x1 convolution instead; torchvision and this block stride the
/// 3x3 one.
class Bottleneck : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 4;

  /// REQUIRES: in_channels, planes, stride >= 1.
  Bottleneck(int64_t in_channels, int64_t planes, int64_t stride);

  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // null when not needed
};

}  // namespace pstrain::models
