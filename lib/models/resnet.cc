#include "models/resnet.h"

#include <string>

#include <torch/torch.h>

#include "util/check.h"

namespace pstrain::models {

namespace nn = torch::nn;

const char* ResNetStem(const InputShape& input) {
  return input.image_size <= kCifarStemMaxImageSize ? "cifar" : "imagenet";
}

ResNet::ResNet(Block block, const std::array<int, 4>& blocks,
               const InputShape& input)
    : cifar_stem_(input.image_size <= kCifarStemMaxImageSize) {
  PS_CHECK(input.channels >= 1 && input.image_size >= 1 &&
           input.num_classes >= 1)
      << "bad ResNet input shape";
  constexpr int64_t kStemChannels = 64;
  conv1_ = register_module(
      "conv1", cifar_stem_ ? ResNetConv(input.channels, kStemChannels, 3, 1)
                           : ResNetConv(input.channels, kStemChannels, 7, 2));
  bn1_ = register_module("bn1", ResNetBatchNorm(kStemChannels));
  const int64_t expansion =
      block == Block::kBasic ? BasicBlock::kExpansion : Bottleneck::kExpansion;
  int64_t in_channels = kStemChannels;
  for (size_t stage = 0; stage < layers_.size(); ++stage) {
    PS_CHECK(blocks[stage] >= 1) << "a ResNet stage needs a block";
    const int64_t planes = kStemChannels << stage;  // 64, 128, 256, 512
    layers_[stage] =
        register_module("layer" + std::to_string(stage + 1), nn::Sequential());
    for (int i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      std::shared_ptr<ResidualBlock> b;
      if (block == Block::kBasic) {
        b = std::make_shared<BasicBlock>(in_channels, planes, stride);
      } else {
        b = std::make_shared<Bottleneck>(in_channels, planes, stride);
      }
      layers_[stage]->push_back(b);  // named "0", "1", ...
      blocks_.push_back(std::move(b));
      in_channels = planes * expansion;
    }
  }
  fc_ = register_module("fc", nn::Linear(in_channels, input.num_classes));
  InitializeLikeTorchvision();
}

// torchvision's ResNet.__init__ loop; fc keeps nn::Linear's own init, which
// is nn.Linear's.
void ResNet::InitializeLikeTorchvision() {
  torch::NoGradGuard no_grad;
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut,
                                torch::kReLU);
    } else if (auto* bn = module->as<nn::BatchNorm2d>()) {
      nn::init::constant_(bn->weight, 1);
      nn::init::constant_(bn->bias, 0);
    }
  }
}

torch::Tensor ResNet::forward(torch::Tensor x) {
  Await(*conv1_);
  x = conv1_->forward(x);
  Await(*bn1_);
  x = bn1_->forward(x).relu_();
  if (!cifar_stem_)
    x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  for (const auto& block : blocks_) {
    Await(*block);
    x = block->forward(OnDeviceOf(*block, x));
  }
  x = torch::flatten(torch::adaptive_avg_pool2d(x, {1, 1}), 1);
  x = OnDeviceOf(*fc_, x);
  Await(*fc_);
  x = fc_->forward(x);
  return torch::log_softmax(x, /*dim=*/1);
}

// Its flatten comes last: the stem, layer1 and layer2 on the first device,
// layer3, layer4 and fc on the second, about half of ResNet-50's compute
// each.
void ResNet::Place(const std::vector<torch::Device>& devices) {
  conv1_->to(devices.front());
  bn1_->to(devices.front());
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->to(i < 2 ? devices.front() : devices.back());
  fc_->to(devices.back());
}

std::shared_ptr<ResNet> MakeResNet18(const InputShape& input) {
  return std::make_shared<ResNet>(ResNet::Block::kBasic,
                                  std::array<int, 4>{2, 2, 2, 2}, input);
}

std::shared_ptr<ResNet> MakeResNet34(const InputShape& input) {
  return std::make_shared<ResNet>(ResNet::Block::kBasic,
                                  std::array<int, 4>{3, 4, 6, 3}, input);
}

std::shared_ptr<ResNet> MakeResNet50(const InputShape& input) {
  return std::make_shared<ResNet>(ResNet::Block::kBottleneck,
                                  std::array<int, 4>{3, 4, 6, 3}, input);
}

}  // namespace pstrain::models
