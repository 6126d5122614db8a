#include "models/mlp.h"

#include <torch/torch.h>

namespace pstrain::models {

namespace nn = torch::nn;

Mlp::Mlp()
    : fc1_(register_module("fc1", nn::Linear(784, 256))),
      fc2_(register_module("fc2", nn::Linear(256, 10))) {}

torch::Tensor Mlp::forward(torch::Tensor x) {
  x = OnDeviceOf(*fc1_, torch::flatten(x, 1));
  Await(*fc1_);
  x = torch::relu(fc1_->forward(x));
  Await(*fc2_);
  x = fc2_->forward(x);
  return torch::log_softmax(x, /*dim=*/1);
}

// Its flatten comes first: every layer is after it.
void Mlp::Place(const std::vector<torch::Device>& devices) {
  fc1_->to(devices.back());
  fc2_->to(devices.back());
}

}  // namespace pstrain::models
