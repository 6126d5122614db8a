#include "ps/store/parameter_server.h"

#include <algorithm>
#include <limits>

#include <ATen/Functions.h>
#include <torch/optim/optimizer.h>
#include <torch/torch.h>

#include "ps/job/shard_plan.h"
#include "ps/job/tensor_codec.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

// --server_threads: whole keys in `groups` sets of about equal bytes, as
// ShardPlan spreads keys over servers (largest first to the lightest set),
// each set in key order.
std::vector<std::vector<at::Tensor>> GroupKeys(
    const std::vector<at::Tensor>& params, int groups) {
  groups = std::max(1, std::min<int>(groups, static_cast<int>(params.size())));
  std::vector<wire::KeySpec> keys;
  for (const auto& p : params)
    keys.push_back(KeySpecOf("", p));
  if (keys.empty())
    return {};
  auto plan = PlanShards(keys, groups, std::numeric_limits<uint64_t>::max());
  PS_CHECK(plan.ok()) << plan.status().message();
  std::vector<std::vector<at::Tensor>> out;
  for (int g = 0; g < groups; ++g)
    out.push_back(SliceViews(*plan, g, params));
  return out;
}

}  // namespace

ParameterServer::ParameterServer(const JobSpec& spec,
                                 std::vector<at::Tensor> params,
                                 std::vector<bool> row_sparse)
    : spec_(spec),
      num_workers_(spec.num_workers()),
      params_(std::move(params)),
      schedule_versions_(ScheduleVersions(spec)) {
  rows_.sparse = std::move(row_sparse);
  PS_CHECK(num_workers_ >= 1) << "no workers in world_size " << spec.world_size;
  PS_CHECK(rows_.sparse.empty() || rows_.sparse.size() == params_.size())
      << rows_.sparse.size() << " row-sparse flags for " << params_.size()
      << " keys";
  std::vector<at::Tensor> trained;
  for (size_t k = 0; k < params_.size(); ++k) {
    is_buffer_.push_back(!params_[k].requires_grad());
    if (params_[k].requires_grad() && !is_row_sparse(static_cast<int>(k)))
      trained.push_back(params_[k]);
  }
  for (auto& group : GroupKeys(trained, spec.server_threads)) {
    opt_.owned.push_back(
        MakeOptimizer(ServerOptimizerSpec(spec), std::move(group)));
    opt_.ptrs.push_back(opt_.owned.back().get());
  }
  opt_.dense = static_cast<int>(opt_.owned.size());
  opt_.dense_ptrs = opt_.ptrs;
  MakeRowOptimizers();
  opt_.stepper = std::make_unique<Fanout>(static_cast<int>(opt_.owned.size()),
                                          [this](int i) {
                                            opt_.owned[i]->step();
                                            return Status::Ok();
                                          });
  auto schedule = LrScheduleOf(spec);
  PS_CHECK(schedule.ok()) << schedule.status().message();
  schedule_ = *schedule;
  for (const auto& p : params_) {
    PS_CHECK(p.scalar_type() == at::kFloat || p.scalar_type() == at::kDouble ||
             (!p.requires_grad() && p.scalar_type() == at::kLong))
        << "parameters must be float32 or float64, buffers also int64";
  }
}

ParameterServer::~ParameterServer() = default;

bool ParameterServer::has_row_sparse() const {
  return std::any_of(rows_.sparse.begin(), rows_.sparse.end(),
                     [](bool b) { return b; });
}

double ParameterServer::lr() const {
  return ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_);
}

void ParameterServer::set_version(uint64_t version) {
  PS_CHECK(pushes_ == 0) << "set_version after a push";
  version_ = version;
}

void ParameterServer::SetGradients(const std::vector<at::Tensor>& grads) {
  for (int k = 0; k < num_keys(); ++k) {
    if (is_dense(k))
      params_[k].mutable_grad() = grads[k];
  }
  grad_key_ = -1;  // every key's is set
}

void ParameterServer::ClearGradients() {
  for (int k = 0; k < num_keys(); ++k) {
    if (is_dense(k))
      params_[k].mutable_grad() = at::Tensor();
  }
}

void ParameterServer::Step(double lr) {
  for (auto& o : opt_.owned)
    SetLr(*o, lr);
  if (!opt_.owned.empty()) {
    PS_CHECK(opt_.stepper->Run().ok());
  }
  ++version_;
  last_step_ = {version_, lr};
}

std::optional<double> ParameterServer::StepLr(uint64_t version) const {
  if (version != version_ || last_step_.version != version || version == 0)
    return std::nullopt;
  return last_step_.lr;
}

void ParameterServer::Replay(const std::vector<at::Tensor>& values, double lr) {
  PS_CHECK(!has_row_sparse()) << "a replayed step has no rows";
  SetGradients(values);
  CopyBuffers(values);
  Step(lr);
}

// One optimizer step with only this key's gradient defined: libtorch's
// optimizers skip parameters without a gradient, and their state (momentum,
// Adam's moments and step count) is per parameter, so key by key computes
// exactly what one step over all keys does.
void ParameterServer::StepKey(int k, const at::Tensor& value, double lr) {
  if (is_buffer_[k]) {
    params_[k].copy_(value);
    return;
  }
  if (is_row_sparse(k))
    return StepRows(k, lr);
  // SetGradients sets every key's gradient; after one key's step only that
  // key's is left to clear.
  if (grad_key_ >= 0) {
    params_[grad_key_].mutable_grad() = at::Tensor();
  } else {
    ClearGradients();
  }
  params_[k].mutable_grad() = value;
  grad_key_ = k;
  SetLr(*opt_.owned[0], lr);
  opt_.owned[0]->step();
}

// --clip_grad_norm: libtorch's clip_grad_norm_ over every parameter's
// gradient, as a single process calls it after backward.
void ParameterServer::ClipGradients() {
  if (spec_.clip_grad_norm <= 0)
    return;
  std::vector<at::Tensor> grads = PendingRowGradients();
  std::vector<at::Tensor> trained;
  for (int k = 0; k < num_keys(); ++k) {
    if (is_dense(k))
      trained.push_back(params_[k]);
  }
  if (grads.empty()) {
    torch::nn::utils::clip_grad_norm_(trained, spec_.clip_grad_norm);
    return;
  }
  // Rows a step does not touch have gradient 0: the touched rows' norm is
  // the dense table's. clip_grad_norm_'s arithmetic, over both kinds.
  for (const auto& p : trained) {
    if (p.grad().defined())
      grads.push_back(p.grad());
  }
  std::vector<at::Tensor> norms;
  for (const auto& g : grads)
    norms.push_back(g.norm());
  const at::Tensor coef =
      (spec_.clip_grad_norm / (at::stack(norms).norm() + 1e-6)).clamp_max(1.0);
  for (auto& g : grads)
    g.mul_(coef);
}

void ParameterServer::CopyBuffers(const std::vector<at::Tensor>& values) {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (is_buffer_[k])
      params_[k].copy_(values[k]);
  }
}

}  // namespace pstrain::ps
