#pragma once
// A model's state as the parameter server sees it: every parameter and
// every buffer (BatchNorm's running statistics), by name, in the order of
// PyTorch's state_dict (each module's own parameters, then its own buffers,
// then its children's, depth first). A tensor's index in this list is its
// key on the wire. Parameters are trained by the server's optimizer; buffers
// are not: the server keeps the workers' values (the mean of a sync step's,
// or each async push's as it comes). A parameter registered under two names
// (lstm_lm's --tie_weights: decoder.weight is encoder.weight) is one key,
// under its first name in that order; the second name is left out.
// Free functions; thread-compatible.

#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace torch::nn {
class Module;
}

namespace pstrain::models {

struct StateTensor {
  std::string name;     ///< as in state_dict: "layer1.0.bn1.running_mean"
  torch::Tensor value;  ///< the module's own tensor (not a copy)
  bool is_buffer = false;
};

/// The state of `module` in state_dict order (see above). Net, ConvNet and
/// Mlp have no buffers: for them this is named_parameters() in order.
std::vector<StateTensor> ModelState(const torch::nn::Module& module);

/// The values of ModelState(module), in order.
std::vector<torch::Tensor> StateValues(const torch::nn::Module& module);

/// For each key of ModelState(module): whether it is a buffer.
std::vector<bool> BufferKeys(const torch::nn::Module& module);

/// The names ModelState leaves out, each with the name of the key it is
/// (alias, key), in state_dict order: lstm_lm's --tie_weights gives
/// ("decoder.weight", "encoder.weight"). A checkpoint writes them too, so
/// that it is PyTorch's state_dict and loads with strict=True.
std::vector<std::pair<std::string, std::string>> StateAliases(
    const torch::nn::Module& module);

}  // namespace pstrain::models
