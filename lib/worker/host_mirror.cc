#include "worker/host_mirror.h"

#include <torch/torch.h>

namespace pstrain::worker {

HostMirror::HostMirror(models::Model& model) {
  for (auto& p : model.parameters()) {
    model_params_.push_back(p);
    on_cpu_ = on_cpu_ && p.device().is_cpu();
    // Gradients must exist before the first push; zeros keep shape/dtype.
    p.mutable_grad() = torch::zeros_like(p);
    params_.push_back(
        on_cpu_ ? p : torch::empty(p.sizes(), p.options().device(torch::kCPU)));
    grads_.push_back(
        on_cpu_ ? p.mutable_grad()
                : torch::empty(p.sizes(), p.options().device(torch::kCPU)));
  }
}

void HostMirror::ParamsToModel() {
  if (on_cpu_)
    return;
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k)
    model_params_[k].copy_(params_[k]);
}

void HostMirror::GradsToHost() {
  if (on_cpu_)
    return;
  for (size_t k = 0; k < grads_.size(); ++k)
    grads_[k].copy_(model_params_[k].grad());
}

}  // namespace pstrain::worker
