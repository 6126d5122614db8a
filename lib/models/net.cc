#include "models/net.h"

#include <torch/torch.h>

namespace pstrain::models {

namespace nn = torch::nn;

Net::Net()
    : conv1_(register_module(
          "conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3).stride(1)))),
      conv2_(register_module(
          "conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3).stride(1)))),
      dropout1_(register_module("dropout1", nn::Dropout2d(0.25))),
      dropout2_(register_module("dropout2", nn::Dropout(0.5))),
      fc1_(register_module("fc1", nn::Linear(9216, 128))),
      fc2_(register_module("fc2", nn::Linear(128, 10))) {}

torch::Tensor Net::forward(torch::Tensor x) {
  Await(*conv1_);
  x = torch::relu(conv1_->forward(x));
  Await(*conv2_);
  x = torch::relu(conv2_->forward(x));
  x = torch::max_pool2d(x, 2);
  x = dropout1_->forward(x);
  x = OnDeviceOf(*fc1_, torch::flatten(x, 1));
  Await(*fc1_);
  x = torch::relu(fc1_->forward(x));
  x = dropout2_->forward(x);
  Await(*fc2_);
  x = fc2_->forward(x);
  return torch::log_softmax(x, /*dim=*/1);
}

void Net::Place(const std::vector<torch::Device>& devices) {
  conv1_->to(devices.front());
  conv2_->to(devices.front());
  fc1_->to(devices.back());
  fc2_->to(devices.back());
}

}  // namespace pstrain::models
