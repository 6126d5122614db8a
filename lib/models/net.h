#pragma once
// Net: the CNN of PyTorch's RPC parameter-server tutorial, 1,199,882
// parameters named conv1.weight, conv1.bias, conv2.weight, conv2.bias,
// fc1.weight, fc1.bias, fc2.weight, fc2.bias (in that order).
//   conv1 Conv2d(1,32,3,1) -> relu -> conv2 Conv2d(32,64,3,1) -> relu
//   -> max_pool2d(2) -> dropout1 Dropout2d(0.25) -> flatten
//   -> fc1 Linear(9216,128) -> relu -> dropout2 Dropout(0.5)
//   -> fc2 Linear(128,10) -> log_softmax(dim 1)

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "models/model.h"

namespace pstrain::models {

class Net : public Model {
 public:
  /// Draws the parameters from torch's global generator.
  Net();

  /// x: float32 [B,1,28,28]. Returns log-probabilities, float32 [B,10].
  torch::Tensor forward(torch::Tensor x) override;
  /// Model::Place's split.
  void Place(const std::vector<torch::Device>& devices) override;

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::Conv2d conv2_;
  torch::nn::Dropout2d dropout1_;
  torch::nn::Dropout dropout2_;
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};

}  // namespace pstrain::models
