#include "models/convnet.h"

#include <torch/torch.h>

namespace pstrain::models {

namespace nn = torch::nn;

ConvNet::ConvNet()
    : conv1_(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 3, 3)))),
      fc_(register_module("fc", nn::Linear(192, 10))) {}

torch::Tensor ConvNet::forward(torch::Tensor x) {
  Await(*conv1_);
  x = torch::relu(torch::max_pool2d(conv1_->forward(x), 3));
  x = OnDeviceOf(*fc_, x.view({-1, 192}));
  Await(*fc_);
  x = fc_->forward(x);
  return torch::log_softmax(x, /*dim=*/1);
}

void ConvNet::Place(const std::vector<torch::Device>& devices) {
  conv1_->to(devices.front());
  fc_->to(devices.back());
}

}  // namespace pstrain::models
