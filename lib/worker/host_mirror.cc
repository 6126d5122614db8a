#include "worker/host_mirror.h"

#include <torch/torch.h>

#include "models/model_state.h"

namespace pstrain::worker {

HostMirror::HostMirror(models::Model& model) {
  for (auto& p : model.parameters())
    on_cpu_ = on_cpu_ && p.device().is_cpu();
  for (auto& s : models::ModelState(model)) {
    at::Tensor& p = s.value;
    model_params_.push_back(p);
    // Gradients must exist before the first push; zeros keep shape/dtype.
    // A buffer is pushed as it is: its "gradient" is the buffer itself.
    if (!s.is_buffer)
      p.mutable_grad() = torch::zeros_like(p);
    const at::Tensor& push = s.is_buffer ? p : p.mutable_grad();
    // Pinned: a copy from or to it runs without the CPU, beside compute.
    const auto host = p.options().device(torch::kCPU).pinned_memory(true);
    params_.push_back(on_cpu_ ? p : torch::empty(p.sizes(), host));
    grads_.push_back(on_cpu_ ? push : torch::empty(p.sizes(), host));
    is_buffer_.push_back(s.is_buffer);
  }
}

void HostMirror::ParamsToModel() {
  if (on_cpu_)
    return;
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k)
    model_params_[k].copy_(params_[k]);
}

}  // namespace pstrain::worker
