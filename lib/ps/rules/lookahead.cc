#include "ps/rules/lookahead.h"

#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/optim/sgd.h>

#include "util/check.h"

namespace pstrain::ps {

namespace {

// libtorch 1.13 keys an optimizer's state by the text of the parameter's
// TensorImpl address, 2.x by the address itself.
template <typename State>
const torch::optim::OptimizerParamState* FindState(const State& state,
                                                   const at::Tensor& p) {
  using Key = typename State::key_type;
  Key key;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    key = text.str();
  } else {
    key = p.unsafeGetTensorImpl();
  }
  auto it = state.find(key);
  return it == state.end() ? nullptr : it->second.get();
}

}  // namespace

Lookahead::Lookahead(double momentum, const std::vector<at::Tensor>& params,
                     const std::vector<bool>& trained, int num_workers) {
  PS_CHECK(momentum > 0 && momentum < 1 && num_workers >= 1 &&
           trained.size() == params.size())
      << "Lookahead(" << momentum << ", " << num_workers << " workers)";
  const int tau = num_workers - 1;
  factor_ = momentum * (1 - std::pow(momentum, tau)) / (1 - momentum);
  // Detached once: views of the same storage, so that a reply makes no
  // tensor of its own.
  for (size_t k = 0; k < params.size(); ++k) {
    params_.push_back(params[k].detach());
    stepped_.push_back(params[k]);
    if (trained[k])
      bytes_per_worker_ += params[k].nbytes();
  }
  momentum_.resize(params.size());
  sent_.resize(num_workers);
  for (auto& keys : sent_) {
    keys.resize(params.size());
    for (size_t k = 0; k < params.size(); ++k) {
      if (trained[k])
        keys[k] = params_[k].clone();
    }
  }
}

void Lookahead::Prepare(
    int w, double lr, const std::vector<torch::optim::Optimizer*>& optimizers) {
  std::vector<at::Tensor>& keys = sent_.at(w);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (!keys[k].defined())
      continue;
    keys[k].copy_(params_[k]);
    // sgd makes a key's buffer at its first step and updates it in place
    // from then on: looked up until found, then kept.
    for (size_t o = 0; !momentum_[k].defined() && o < optimizers.size(); ++o) {
      const auto* s = FindState(optimizers[o]->state(), stepped_[k]);
      const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(s);
      if (sgd != nullptr)
        momentum_[k] = sgd->momentum_buffer();
    }
    if (momentum_[k].defined())
      keys[k].add_(momentum_[k], -lr * factor_);
  }
}

const at::Tensor& Lookahead::Sent(int w, int key) const {
  const at::Tensor& t = sent_.at(w)[key];
  return t.defined() ? t : params_[key];
}

}  // namespace pstrain::ps
