#include "models/resnet_blocks.h"

#include <torch/torch.h>

namespace pstrain::models {

namespace nn = torch::nn;

namespace {

// torchvision's _make_layer: a 1x1 strided convolution and a BatchNorm when
// the shortcut changes the shape, otherwise none (the identity).
nn::Sequential MakeDownsample(int64_t in_channels, int64_t out_channels,
                              int64_t stride) {
  if (stride == 1 && in_channels == out_channels)
    return nullptr;
  return nn::Sequential(ResNetConv(in_channels, out_channels, 1, stride),
                        ResNetBatchNorm(out_channels));
}

}  // namespace

nn::Conv2d ResNetConv(int64_t in_channels, int64_t out_channels, int64_t kernel,
                      int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in_channels, out_channels, kernel)
                        .stride(stride)
                        .padding(kernel / 2)
                        .bias(false));
}

nn::BatchNorm2d ResNetBatchNorm(int64_t channels) {
  return nn::BatchNorm2d(nn::BatchNorm2dOptions(channels)
                             .eps(1e-5)
                             .momentum(0.1)
                             .affine(true)
                             .track_running_stats(true));
}

// Registration order is torchvision's, which is the state_dict order.
BasicBlock::BasicBlock(int64_t in_channels, int64_t planes, int64_t stride) {
  conv1_ = register_module("conv1", ResNetConv(in_channels, planes, 3, stride));
  bn1_ = register_module("bn1", ResNetBatchNorm(planes));
  conv2_ = register_module("conv2", ResNetConv(planes, planes, 3, 1));
  bn2_ = register_module("bn2", ResNetBatchNorm(planes));
  if (auto d = MakeDownsample(in_channels, planes * kExpansion, stride))
    downsample_ = register_module("downsample", d);
}

torch::Tensor BasicBlock::forward(torch::Tensor x) {
  torch::Tensor out = bn1_->forward(conv1_->forward(x)).relu_();
  out = bn2_->forward(conv2_->forward(out));
  out += downsample_ ? downsample_->forward(x) : x;
  return out.relu_();
}

Bottleneck::Bottleneck(int64_t in_channels, int64_t planes, int64_t stride) {
  conv1_ = register_module("conv1", ResNetConv(in_channels, planes, 1, 1));
  bn1_ = register_module("bn1", ResNetBatchNorm(planes));
  conv2_ = register_module("conv2", ResNetConv(planes, planes, 3, stride));
  bn2_ = register_module("bn2", ResNetBatchNorm(planes));
  conv3_ =
      register_module("conv3", ResNetConv(planes, planes * kExpansion, 1, 1));
  bn3_ = register_module("bn3", ResNetBatchNorm(planes * kExpansion));
  if (auto d = MakeDownsample(in_channels, planes * kExpansion, stride))
    downsample_ = register_module("downsample", d);
}

torch::Tensor Bottleneck::forward(torch::Tensor x) {
  torch::Tensor out = bn1_->forward(conv1_->forward(x)).relu_();
  out = bn2_->forward(conv2_->forward(out)).relu_();
  out = bn3_->forward(conv3_->forward(out));
  out += downsample_ ? downsample_->forward(x) : x;
  return out.relu_();
}

}  // namespace pstrain::models
