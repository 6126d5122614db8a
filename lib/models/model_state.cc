#include "models/model_state.h"

#include <torch/nn/module.h>

namespace pstrain::models {
namespace {

// Module::_save_to_state_dict's order: own parameters, own buffers, then
// each child under "<child>.".
// A tensor met again (tied weights) is left out: it is the key of its
// first name.
void Collect(const torch::nn::Module& module, const std::string& prefix,
             std::vector<StateTensor>* out) {
  auto seen = [out](const torch::Tensor& t) {
    for (const auto& s : *out) {
      if (s.value.unsafeGetTensorImpl() == t.unsafeGetTensorImpl())
        return true;
    }
    return false;
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    if (!seen(p.value()))
      out->push_back({prefix + p.key(), p.value(), false});
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    out->push_back({prefix + b.key(), b.value(), true});
  for (const auto& child : module.named_children())
    Collect(*child.value(), prefix + child.key() + ".", out);
}

}  // namespace

std::vector<StateTensor> ModelState(const torch::nn::Module& module) {
  std::vector<StateTensor> out;
  Collect(module, "", &out);
  return out;
}

std::vector<torch::Tensor> StateValues(const torch::nn::Module& module) {
  std::vector<torch::Tensor> out;
  for (auto& s : ModelState(module))
    out.push_back(s.value);
  return out;
}

std::vector<bool> BufferKeys(const torch::nn::Module& module) {
  std::vector<bool> out;
  for (const auto& s : ModelState(module))
    out.push_back(s.is_buffer);
  return out;
}

}  // namespace pstrain::models
