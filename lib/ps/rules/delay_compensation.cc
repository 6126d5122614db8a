#include "ps/rules/delay_compensation.h"

#include <ATen/ATen.h>

#include "util/check.h"

namespace pstrain::ps {

DelayCompensation::DelayCompensation(double lambda,
                                     const std::vector<at::Tensor>& params,
                                     const std::vector<bool>& compensated,
                                     int num_workers)
    : lambda_(lambda) {
  PS_CHECK(lambda > 0 && num_workers >= 1 &&
           compensated.size() == params.size())
      << "DelayCompensation(" << lambda << ", " << params.size() << " keys, "
      << compensated.size() << " flags, " << num_workers << " workers)";
  scratch_.resize(params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    // Detached once: views of the same storage, so that a push or a reply
    // makes no tensor of its own.
    params_.push_back(params[k].detach());
    if (compensated[k]) {
      scratch_[k] = at::empty_like(params[k]);
      bytes_per_worker_ += params[k].nbytes();
    }
  }
  sent_.resize(num_workers);
  for (auto& keys : sent_) {
    keys.resize(params.size());
    for (size_t k = 0; k < params.size(); ++k) {
      if (compensated[k])
        keys[k] = params_[k].clone();
    }
  }
}

void DelayCompensation::NoteSent(int w) {
  std::vector<at::Tensor>& keys = sent_.at(w);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (keys[k].defined())
      keys[k].copy_(params_[k]);
  }
}

void DelayCompensation::Correct(int w, const std::vector<at::Tensor>& grads) {
  const std::vector<at::Tensor>& sent = sent_.at(w);
  for (size_t k = 0; k < sent.size(); ++k) {
    if (!sent[k].defined())
      continue;
    at::Tensor& d = scratch_[k];
    const at::Tensor& g = grads[k];
    // d = (w_now - w_sent) * g * g; g += lambda * d.
    at::sub_out(d, params_[k], sent[k]);
    d.mul_(g).mul_(g);
    g.add_(d, lambda_);
  }
}

uint64_t DelayCompensation::bytes() const {
  return bytes_per_worker_ * (sent_.size() + 1);
}

}  // namespace pstrain::ps
