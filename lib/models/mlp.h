#pragma once
// Mlp: a two-layer perceptron, 203,530 parameters named fc1.weight,
// fc1.bias, fc2.weight, fc2.bias.
//   flatten -> fc1 Linear(784,256) -> relu -> fc2 Linear(256,10)
//   -> log_softmax(dim 1)

#include <torch/nn/modules/linear.h>

#include "models/model.h"

namespace pstrain::models {

class Mlp : public Model {
 public:
  /// Draws the parameters from torch's global generator.
  Mlp();

  /// x: float32 [B,1,28,28]. Returns log-probabilities, float32 [B,10].
  torch::Tensor forward(torch::Tensor x) override;
  /// Model::Place's split.
  void Place(const std::vector<torch::Device>& devices) override;

 private:
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
};

}  // namespace pstrain::models
