#include "ps/parameter_server.h"

#include <algorithm>
#include <limits>

#include <ATen/Functions.h>
#include <torch/optim/optimizer.h>
#include <torch/torch.h>

#include "ps/async_recipe.h"
#include "ps/shard_plan.h"
#include "ps/tensor_codec.h"
#include "ps/update_rule.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

// One pass over a piece: the step's first push copies (no zeroing pass), a
// middle one adds, the last one adds and divides by the count (no separate
// averaging pass). The sums are the same as zero + g1 + g2 + ... then / n.
template <typename T>
void Reduce(void* acc, const void* data, uint64_t n, int arrival, int count) {
  T* dst = static_cast<T*>(acc);
  const T* src = static_cast<const T*>(data);
  if (arrival == 0 && count == 1) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = (T(0) + src[i]) / T(count);
  } else if (arrival == 0) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = T(0) + src[i];
  } else if (arrival + 1 < count) {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] += src[i];
  } else {
    for (uint64_t i = 0; i < n; ++i)
      dst[i] = (dst[i] + src[i]) / T(count);
  }
}

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
    size_t pieces = 0;
    for (const auto& p : params_) {
      accumulators_.push_back(at::zeros_like(p));
      pieces_.base.push_back(pieces);
      pieces += (p.nbytes() + kPieceBytes - 1) / kPieceBytes;
    }
    pieces_.arrivals.assign(pieces, 0);
    pieces_.extra.assign(pieces, 0);
    pieces_.contributed.assign(num_workers_, std::vector<bool>(pieces, false));
    pushed_.assign(num_workers_, false);
  }
  live_.assign(num_workers_, true);
  live_count_ = needed_ = num_workers_;
  by_key_.next = static_cast<int>(params_.size());
  by_key_.on = false;
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
  at::Tensor& acc = accumulators_.at(key);
  const size_t esize = acc.element_size();
  PS_CHECK(offset % esize == 0 && bytes % esize == 0 &&
           offset + bytes <= acc.nbytes())
      << "bad piece " << offset << "+" << bytes << " of key " << key;
  PS_CHECK(offset % kPieceBytes == 0 &&
           bytes == std::min<uint64_t>(kPieceBytes, acc.nbytes() - offset))
      << "pieces must be whole: " << offset << "+" << bytes;
  // Workers' pieces interleave; count arrivals per piece. A piece is done
  // once every worker of this step, and every lost one that got its bytes
  // in before it went, has added.
  const size_t piece = pieces_.base[key] + offset / kPieceBytes;
  uint16_t& arrivals = pieces_.arrivals[piece];
  const int count = needed_ + pieces_.extra[piece];
  char* base = static_cast<char*>(acc.data_ptr()) + offset;
  if (acc.scalar_type() == at::kFloat) {
    Reduce<float>(base, data, bytes / esize, arrivals, count);
  } else if (acc.scalar_type() == at::kDouble) {
    Reduce<double>(base, data, bytes / esize, arrivals, count);
  } else {
    Reduce<int64_t>(base, data, bytes / esize, arrivals, count);
  }
  ++arrivals;
  pieces_.contributed[w][piece] = true;
  step_started_ = true;
}

Result<bool> ParameterServer::Push(int w, uint64_t version) {
  PS_RETURN_IF_ERROR(CheckPush(w, version));
  ++pushes_;
  if (applies_each_push()) {
    // A push from the future (a confused peer) counts as fresh.
    const uint64_t staleness = version_ > version ? version_ - version : 0;
    ++staleness_histogram_[std::min<uint64_t>(staleness, kMaxStaleness)];
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
        accumulators_[k].copy_(grad_buffers_[w][k]);
      } else {
        accumulators_[k].add_(grad_buffers_[w][k]);
      }
      first = false;
    }
    if (accumulators_[k].is_floating_point()) {
      accumulators_[k].div_(push_count_);
    } else {
      accumulators_[k].div_(push_count_, "trunc");
    }
  }
  SumPushedRows();
  FinishStep();
  return true;
}

void ParameterServer::FinishStep() {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!is_buffer_[k] && !is_row_sparse(static_cast<int>(k)))
      params_[k].mutable_grad() = accumulators_[k];
  }
  TakeRowSums(discards_.pending);
  if (!discards_.pending)
    ClipGradients();  // the mean's norm, as one process clips its own
  if (discards_.pending) {
    ++version_;  // no optimizer step: the parameters stay as they are
    ++discards_.count;
    discards_.pending = false;
  } else if (by_key_.on && opt_.dense <= 1) {
    by_key_.lr = ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_);
    by_key_.next = 0;
    ++version_;
  } else {
    Step(1.0);
    // Buffers become the mean of the workers' (the accumulators hold it).
    CopyBuffers(accumulators_);
  }
  std::fill(pieces_.arrivals.begin(), pieces_.arrivals.end(), 0);
  std::fill(pieces_.extra.begin(), pieces_.extra.end(), 0);
  for (auto& c : pieces_.contributed)
    std::fill(c.begin(), c.end(), false);
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

// One optimizer step with only this key's gradient defined: libtorch's
// optimizers skip parameters without a gradient, and their state (momentum,
// Adam's moments and step count) is per parameter, so key by key computes
// exactly what one step over all keys does.
int ParameterServer::StepNextKey() {
  if (by_key_.next >= num_keys())
    return -1;
  const int k = by_key_.next++;
  if (is_buffer_[k]) {
    params_[k].copy_(accumulators_[k]);
    return k;
  }
  if (is_row_sparse(k)) {
    StepRows(k, by_key_.lr);
    return k;
  }
  for (int j = 0; j < num_keys(); ++j) {
    if (!is_buffer_[j] && !is_row_sparse(j))
      params_[j].mutable_grad() = j == k ? accumulators_[k] : at::Tensor();
  }
  SetLr(*opt_.owned[0], by_key_.lr);
  opt_.owned[0]->step();
  return k;
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
