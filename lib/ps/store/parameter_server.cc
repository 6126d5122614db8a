#include "ps/store/parameter_server.h"

#include <algorithm>
#include <limits>

#include <ATen/Functions.h>
#include <torch/optim/optimizer.h>
#include <torch/torch.h>

#include "ps/job/rule_traits.h"
#include "ps/job/shard_plan.h"
#include "ps/job/tensor_codec.h"
#include "ps/store/async_recipe.h"
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
      order_(static_cast<int>(params_.size())),
      schedule_versions_(ScheduleVersions(spec)),
      staleness_histogram_(kMaxStaleness + 1, 0),
      quorum_(spec.num_workers() - spec.backup_workers) {
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
        MakeOptimizer(AsyncRecipe::OptimizerSpec(spec), std::move(group)));
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
  if (RuleTraitsOf(spec).buffers_pushes) {
    grad_buffers_.resize(num_workers_);
    for (auto& buffers : grad_buffers_) {
      for (size_t k = 0; k < params_.size(); ++k) {
        // A row-sparse key's pushes land in RowsBuffer instead.
        buffers.push_back(is_row_sparse(static_cast<int>(k))
                              ? at::Tensor()
                              : at::zeros_like(params_[k]));
      }
    }
  }
  std::vector<bool> dense(params_.size());
  for (size_t k = 0; k < params_.size(); ++k)
    dense[k] = !is_buffer_[k] && !is_row_sparse(static_cast<int>(k));
  async_ = std::make_unique<AsyncRecipe>(spec, params_, dense);
  if (!applies_each_push()) {
    sums_ = StepSums(params_, num_workers_);
    pushed_.assign(num_workers_, false);
  }
  live_.assign(num_workers_, true);
  live_count_ = needed_ = num_workers_;
  applied_.assign(num_workers_, -1);
}

ParameterServer::~ParameterServer() = default;

bool ParameterServer::applies_each_push() const {
  return RuleTraitsOf(spec_).applies_each_push;
}

const std::vector<at::Tensor>& ParameterServer::grad_buffer(int w) const {
  PS_CHECK(buffers_pushes()) << "grad_buffer in streaming sync mode";
  return grad_buffers_.at(w);
}

Status ParameterServer::CheckPush(int w, uint64_t version) const {
  PS_CHECK(w >= 0 && w < num_workers_) << "worker index " << w;
  if (!live_[w])
    return InvalidArgument("push from a worker that is not a member");
  if (applies_each_push())
    return Status::Ok();
  if (version != version_ && !(buffers_pushes() && version < version_)) {
    return InvalidArgument("push for version " + std::to_string(version) +
                           " while the server is at version " +
                           std::to_string(version_));
  }
  if (pushed_[w] && version == version_) {
    return InvalidArgument("second push for version " +
                           std::to_string(version));
  }
  return Status::Ok();
}

void ParameterServer::Accumulate(int w, int key, uint64_t offset,
                                 const void* data, uint64_t bytes) {
  sums_.Add(w, key, offset, data, bytes, needed_);
  step_started_ = true;
}

void ParameterServer::AccumulateRecord(int w, int key, wire::Codec codec,
                                       const wire::CodecParams& params,
                                       const uint8_t* data, uint64_t nbytes) {
  sums_.AddRecord(w, key, codec, params, data, nbytes, needed_);
  step_started_ = true;
}

Result<bool> ParameterServer::Push(int w, uint64_t version) {
  PS_RETURN_IF_ERROR(CheckPush(w, version));
  ++pushes_;
  if (applies_each_push()) {
    // A push from the future (a confused peer) counts as fresh.
    const uint64_t staleness = version_ > version ? version_ - version : 0;
    ++staleness_histogram_[std::min<uint64_t>(staleness, kMaxStaleness)];
    applied_[w] = static_cast<int64_t>(version);
    for (size_t k = 0; k < params_.size(); ++k) {
      if (!is_buffer_[k] && !is_row_sparse(static_cast<int>(k)))
        params_[k].mutable_grad() = grad_buffers_[w][k];
    }
    async_->Correct(w, grad_buffers_[w]);
    SetPushedRows(w);
    ClipGradients();
    Step(async_->LrScale(staleness));
    // Buffers take each push's values, in the order pushes arrive.
    CopyBuffers(grad_buffers_[w]);
    return true;
  }
  if (version < version_) {  // buffered sync: its step closed without it
    --pushes_;
    ++dropped_;
    return false;
  }
  pushed_[w] = true;
  step_started_ = true;
  if (buffers_pushes())
    return ++push_count_ >= std::min(quorum_, needed_) && CloseStep();
  if (++push_count_ < needed_)
    return false;
  // The last push's pieces already divided the sums by the worker count.
  FinishStep();
  return true;
}

bool ParameterServer::CloseStep() {
  PS_CHECK(buffers_pushes() && !applies_each_push())
      << "CloseStep: not buffered sync";
  if (push_count_ == 0)
    return false;
  StepAllKeys();  // the accumulators are about to change
  for (size_t k = 0; k < params_.size(); ++k) {
    if (is_row_sparse(static_cast<int>(k)))
      continue;  // SumPushedRows
    bool first = true;
    for (int w = 0; w < num_workers_; ++w) {
      if (!pushed_[w])
        continue;
      if (first) {
        sums_.sum(k).copy_(grad_buffers_[w][k]);
      } else {
        sums_.sum(k).add_(grad_buffers_[w][k]);
      }
      first = false;
    }
    if (sums_.sum(k).is_floating_point()) {
      sums_.sum(k).div_(push_count_);
    } else {
      sums_.sum(k).div_(push_count_, "trunc");
    }
  }
  SumPushedRows();
  FinishStep();
  return true;
}

void ParameterServer::FinishStep() {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!is_buffer_[k] && !is_row_sparse(static_cast<int>(k)))
      params_[k].mutable_grad() = sums_.sum(k);
  }
  by_key_.grad = -1;  // every key's is set
  TakeRowSums(discards_.pending);
  if (!discards_.pending)
    ClipGradients();  // the mean's norm, as one process clips its own
  if (discards_.pending) {
    // No optimizer step: the parameters stay as they are, but for keys
    // stepped ahead before the refused piece came.
    ++version_;
    ++discards_.count;
    discards_.pending = false;
    order_.Discard();
  } else if (by_key_.on && opt_.dense <= 1) {
    by_key_.lr = ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_);
    order_.Close();
    ++version_;
  } else {
    Step(1.0);
    // Buffers become the mean of the workers' (the accumulators hold it).
    CopyBuffers(sums_.sums());
  }
  sums_.Clear();
  pushed_.assign(num_workers_, false);
  push_count_ = 0;
  needed_ = live_count_;
  step_started_ = false;
}

void ParameterServer::NoteParamsSent(int w) {
  async_->NoteSent(
      w, ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_),
      opt_.dense_ptrs);
}

const at::Tensor& ParameterServer::SentParam(int w, int key) const {
  const at::Tensor* sent = async_->Sent(w, key);
  return sent ? *sent : params_[key];
}

uint64_t ParameterServer::delay_compensation_bytes_per_worker() const {
  return async_->delay_compensation_bytes_per_worker();
}

void ParameterServer::set_applied(std::vector<int64_t> applied) {
  PS_CHECK(applied.size() == applied_.size())
      << applied.size() << " applied pushes for " << applied_.size()
      << " workers";
  applied_ = std::move(applied);
}

void ParameterServer::set_version(uint64_t version) {
  PS_CHECK(pushes_ == 0) << "set_version after a push";
  version_ = version;
}

void ParameterServer::Step(double lr_scale) {
  const double lr =
      ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_) * lr_scale;
  for (auto& o : opt_.owned)
    SetLr(*o, lr);
  if (!opt_.owned.empty()) {
    PS_CHECK(opt_.stepper->Run().ok());
  }
  ++version_;
}

int ParameterServer::StepNextKey() {
  const int k = order_.Next();
  if (k >= 0)
    StepKey(k, by_key_.lr);
  return k;
}

// One optimizer step with only this key's gradient defined: libtorch's
// optimizers skip parameters without a gradient, and their state (momentum,
// Adam's moments and step count) is per parameter, so key by key computes
// exactly what one step over all keys does.
void ParameterServer::StepKey(int k, double lr) {
  if (is_buffer_[k]) {
    params_[k].copy_(sums_.sum(k));
    return;
  }
  if (is_row_sparse(k))
    return StepRows(k, lr);
  // FinishStep sets every key's gradient; after one key's step only that
  // key's is left to clear.
  if (by_key_.grad >= 0) {
    params_[by_key_.grad].mutable_grad() = at::Tensor();
  } else {
    for (int j = 0; j < num_keys(); ++j) {
      if (!is_buffer_[j] && !is_row_sparse(j))
        params_[j].mutable_grad() = at::Tensor();
    }
  }
  params_[k].mutable_grad() = sums_.sum(k);
  by_key_.grad = k;
  SetLr(*opt_.owned[0], lr);
  opt_.owned[0]->step();
}

bool ParameterServer::set_step_order(const std::vector<int>& keys) {
  return order_.Set(keys);
}

void ParameterServer::set_step_by_key(bool on) {
  by_key_.on = on;
  by_key_.ahead = on && opt_.dense <= 1 && !buffers_pushes() &&
                  !applies_each_push() && spec_.clip_grad_norm <= 0 &&
                  std::none_of(rows_.sparse.begin(), rows_.sparse.end(),
                               [](bool b) { return b; });
}

bool ParameterServer::ReadyAhead(int key) const {
  return by_key_.ahead && step_started_ && !discards_.pending &&
         !order_.closed() && !order_.ahead(key) && sums_.Final(key, needed_);
}

void ParameterServer::StepAhead(int key) {
  PS_CHECK(ReadyAhead(key)) << "StepAhead(" << key << ")";
  StepKey(key, ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_));
  order_.StepAhead(key);
}

// --clip_grad_norm: libtorch's clip_grad_norm_ over every parameter's
// gradient, as a single process calls it after backward.
void ParameterServer::ClipGradients() {
  if (spec_.clip_grad_norm <= 0)
    return;
  std::vector<at::Tensor> grads = PendingRowGradients();
  std::vector<at::Tensor> trained;
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!is_buffer_[k] && !is_row_sparse(static_cast<int>(k)))
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

std::vector<int> ParameterServer::MissingPushes() const {
  std::vector<int> missing;
  for (int w = 0; w < static_cast<int>(pushed_.size()); ++w) {
    if (awaits_push(w))
      missing.push_back(w);
  }
  return missing;
}

}  // namespace pstrain::ps
