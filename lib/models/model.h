#pragma once
// Model: the interface every network in the zoo implements. A Model is a
// torch::nn::Module whose registered parameter names match those of the
// PyTorch model it mirrors, so that a state_dict moves between the two.
// Not thread-safe: like any torch::nn::Module, one thread trains it at a time.

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace pstrain::models {

class Model : public torch::nn::Module {
 public:
  /// x: float32 [B,C,H,W] (normalized images of the InputShape the model
  /// was built for, models/model_zoo.h), on the model's device. Returns
  /// log-probabilities, float32 [B,num_classes]. Dropout is active, and
  /// BatchNorm normalizes by the batch and updates its running statistics,
  /// only in train() mode. libtorch throws c10::Error on a wrongly shaped
  /// input.
  virtual torch::Tensor forward(torch::Tensor x) = 0;

  /// From now on forward calls `await(n)` before it first uses a layer,
  /// where keys [0, n) (ModelState order: parameters and buffers) include
  /// all of that layer's, and
  /// computes on once it returns: parameters may still be arriving while
  /// forward starts (worker/param_arrivals.h). nullptr (the default): never.
  void set_await(std::function<void(size_t)> await);

 protected:
  /// In forward, before the first use of `layer`'s parameters.
  void Await(const torch::nn::Module& layer) const;
  /// In forward, before the first use of any parameter: waits for every
  /// key (a model whose layers are not its own modules).
  void AwaitAll() const;
  /// What set_await set (empty: nothing to wait for).
  const std::function<void(size_t)>& await() const { return await_; }

 private:
  std::function<void(size_t)> await_;
  // Each layer with parameters, and 1 + the last key among them.
  std::vector<std::pair<const torch::nn::Module*, size_t>> key_ends_;
};

}  // namespace pstrain::models
