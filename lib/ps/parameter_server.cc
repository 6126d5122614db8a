#include "ps/parameter_server.h"

#include <torch/optim/sgd.h>

#include "util/check.h"

namespace pstrain::ps {

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const JobSpec& spec, const std::vector<at::Tensor>& params) {
  PS_CHECK(spec.optimizer == "sgd") << spec.optimizer;
  torch::optim::SGDOptions options(spec.lr);
  options.momentum(spec.momentum).weight_decay(spec.weight_decay);
  return std::make_unique<torch::optim::SGD>(params, options);
}

ParameterServer::ParameterServer(const JobSpec& spec,
                                 std::vector<at::Tensor> params)
    : spec_(spec),
      num_workers_(spec.num_workers()),
      params_(std::move(params)),
      optimizer_(MakeOptimizer(spec, params_)) {
  PS_CHECK(num_workers_ >= 1) << "no workers in world_size " << spec.world_size;
  grad_buffers_.resize(num_workers_);
  for (auto& buffers : grad_buffers_) {
    for (const auto& p : params_) buffers.push_back(at::zeros_like(p));
  }
  if (spec_.mode == Mode::kSync) {
    for (const auto& p : params_) accumulators_.push_back(at::zeros_like(p));
    pushed_.assign(num_workers_, false);
  }
}

ParameterServer::~ParameterServer() = default;

Result<bool> ParameterServer::Push(int w, uint64_t version) {
  PS_CHECK(w >= 0 && w < num_workers_) << "worker index " << w;
  const auto& grads = grad_buffers_[w];
  if (spec_.mode == Mode::kAsync) {
    for (size_t k = 0; k < params_.size(); ++k) {
      params_[k].mutable_grad() = grads[k];
    }
    Step();
    ++pushes_;
    return true;
  }
  if (version != version_) {
    return InvalidArgument("push for version " + std::to_string(version) +
                           " while the server is at version " +
                           std::to_string(version_));
  }
  if (pushed_[w]) {
    return InvalidArgument("second push for version " +
                           std::to_string(version));
  }
  pushed_[w] = true;
  ++push_count_;
  ++pushes_;
  for (size_t k = 0; k < params_.size(); ++k) accumulators_[k].add_(grads[k]);
  if (push_count_ < num_workers_) return false;
  for (size_t k = 0; k < params_.size(); ++k) {
    accumulators_[k].div_(push_count_);
    params_[k].mutable_grad() = accumulators_[k];
  }
  Step();
  for (auto& a : accumulators_) a.zero_();
  pushed_.assign(num_workers_, false);
  push_count_ = 0;
  return true;
}

void ParameterServer::Step() {
  optimizer_->step();
  ++version_;
}

std::vector<int> ParameterServer::MissingPushes() const {
  std::vector<int> missing;
  for (int w = 0; w < static_cast<int>(pushed_.size()); ++w) {
    if (!pushed_[w]) missing.push_back(w);
  }
  return missing;
}

}  // namespace pstrain::ps
