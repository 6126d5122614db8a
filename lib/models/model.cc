#include "models/model.h"

#include <algorithm>

#include "models/model_state.h"

namespace pstrain::models {

void Model::set_await(std::function<void(size_t)> await) {
  await_ = std::move(await);
  key_ends_.clear();
  const auto keys = StateValues(*this);
  for (const auto& layer : modules(/*include_self=*/false)) {
    size_t end = 0;
    auto state = layer->parameters();
    for (const auto& b : layer->buffers())
      state.push_back(b);
    for (const auto& p : state) {
      auto it =
          std::find_if(keys.begin(), keys.end(), [&](const torch::Tensor& k) {
            return k.unsafeGetTensorImpl() == p.unsafeGetTensorImpl();
          });
      end = std::max(end, static_cast<size_t>(it - keys.begin()) + 1);
    }
    if (end > 0)
      key_ends_.emplace_back(layer.get(), end);
  }
}

void Model::Await(const torch::nn::Module& layer) const {
  if (!await_)
    return;
  for (const auto& [module, end] : key_ends_) {
    if (module == &layer)
      return await_(end);
  }
  await_(key_ends_.empty() ? 0
                           : SIZE_MAX);  // not a layer of ours: wait for all
}

void Model::Place(const std::vector<torch::Device>& devices) {
  to(devices.front());
}

torch::Tensor Model::OnDeviceOf(const torch::nn::Module& layer,
                                torch::Tensor x) {
  const auto params = layer.parameters();
  if (params.empty() || params.front().device() == x.device())
    return x;
  return x.to(params.front().device());
}

void Model::AwaitAll() const {
  if (await_)
    await_(SIZE_MAX);
}

}  // namespace pstrain::models
