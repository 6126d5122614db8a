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

  /// Moves the model onto `devices` (REQUIRES: one or two): all of it onto
  /// the first, or, given two, its layers up to the flatten onto the first
  /// and the rest onto the second (PyTorch's RPC tutorial's split of Net,
  /// for --num_gpus 2), where the model has such a split: Net, ConvNet and
  /// Mlp (whose flatten comes first: all on the second); a ResNet puts its
  /// stem, layer1 and layer2 on the first and layer3, layer4 and fc on the
  /// second. Others go whole onto the first. forward then moves its
  /// activations from one to the other; its input goes to the first.
  virtual void Place(const std::vector<torch::Device>& devices);

  /// From now on forward calls `await(n)` before it first uses a layer,
  /// where keys [0, n) (ModelState order: parameters and buffers) include
  /// all of that layer's, and
  /// computes on once it returns: parameters may still be arriving while
  /// forward starts (worker/param_arrivals.h). nullptr (the default): never.
  void set_await(std::function<void(size_t)> await);

 protected:
  /// In forward, before the first use of `layer`'s parameters.
  void Await(const torch::nn::Module& layer) const;
  /// `x` on the device of `layer`'s first parameter (as it is, when it is
  /// there already or the layer has none): the hop between two devices.
  static torch::Tensor OnDeviceOf(const torch::nn::Module& layer,
                                  torch::Tensor x);
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
