#pragma once
// ConvNet: the small CNN of Ray's parameter-server example, 1,960
// parameters named conv1.weight, conv1.bias, fc.weight, fc.bias.
//   conv1 Conv2d(1,3,3) -> max_pool2d(3) -> relu -> view(-1,192)
//   -> fc Linear(192,10) -> log_softmax(dim 1)

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "models/model.h"

namespace pstrain::models {

class ConvNet : public Model {
 public:
  /// Draws the parameters from torch's global generator.
  ConvNet();

  /// x: float32 [B,1,28,28]. Returns log-probabilities, float32 [B,10].
  torch::Tensor forward(torch::Tensor x) override;
  /// Model::Place's split.
  void Place(const std::vector<torch::Device>& devices) override;

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::Linear fc_;
};

}  // namespace pstrain::models
