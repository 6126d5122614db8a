#include "models/model_state.h"

#include <torch/nn/module.h>

namespace pstrain::models {
namespace {

// Module::_save_to_state_dict's order: own parameters, own buffers, then
// each child under "<child>.".
// A tensor met again (tied weights) is left out: it is the key of its
// first name.
// `aliases`, when given, gets (name, first name) of each tensor met again.
void Collect(const torch::nn::Module& module, const std::string& prefix,
             std::vector<StateTensor>* out,
             std::vector<std::pair<std::string, std::string>>* aliases) {
  auto first = [out](const torch::Tensor& t) -> const StateTensor* {
    for (const auto& s : *out) {
      if (s.value.unsafeGetTensorImpl() == t.unsafeGetTensorImpl())
        return &s;
    }
    return nullptr;
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    const StateTensor* met = first(p.value());
    if (met == nullptr)
      out->push_back({prefix + p.key(), p.value(), false});
    else if (aliases != nullptr)
      aliases->emplace_back(prefix + p.key(), met->name);
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    out->push_back({prefix + b.key(), b.value(), true});
  for (const auto& child : module.named_children())
    Collect(*child.value(), prefix + child.key() + ".", out, aliases);
}

}  // namespace

std::vector<StateTensor> ModelState(const torch::nn::Module& module) {
  std::vector<StateTensor> out;
  Collect(module, "", &out, nullptr);
  return out;
}

std::vector<std::pair<std::string, std::string>> StateAliases(
    const torch::nn::Module& module) {
  std::vector<StateTensor> state;
  std::vector<std::pair<std::string, std::string>> aliases;
  Collect(module, "", &state, &aliases);
  return aliases;
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
