#pragma once
// Model: the interface every network in the zoo implements. A Model is a
// torch::nn::Module whose registered parameter names match those of the
// PyTorch model it mirrors, so that a state_dict moves between the two.
// Not thread-safe: like any torch::nn::Module, one thread trains it at a time.

#include <torch/nn/module.h>
#include <torch/types.h>

namespace pstrain::models {

class Model : public torch::nn::Module {
 public:
  /// x: float32 [B,1,28,28] (normalized images), on the model's device.
  /// Returns log-probabilities, float32 [B,10]. Dropout is active only in
  /// train() mode. libtorch throws c10::Error on a wrongly shaped input.
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

}  // namespace pstrain::models
