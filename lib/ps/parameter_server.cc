#include "ps/parameter_server.h"

#include <algorithm>

#include <ATen/Functions.h>
#include <torch/optim/optimizer.h>

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
    for (uint64_t i = 0; i < n; ++i) dst[i] = (T(0) + src[i]) / T(count);
  } else if (arrival == 0) {
    for (uint64_t i = 0; i < n; ++i) dst[i] = T(0) + src[i];
  } else if (arrival + 1 < count) {
    for (uint64_t i = 0; i < n; ++i) dst[i] += src[i];
  } else {
    for (uint64_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) / T(count);
  }
}

}  // namespace

ParameterServer::ParameterServer(const JobSpec& spec,
                                 std::vector<at::Tensor> params)
    : spec_(spec),
      num_workers_(spec.num_workers()),
      params_(std::move(params)),
      optimizer_(MakeOptimizer(spec, params_)),
      schedule_versions_(ScheduleVersions(spec)),
      staleness_histogram_(kMaxStaleness + 1, 0) {
  PS_CHECK(num_workers_ >= 1) << "no workers in world_size " << spec.world_size;
  auto schedule = ParseLrSchedule(spec.lr_schedule);
  PS_CHECK(schedule.ok()) << schedule.status().message();
  schedule_ = *schedule;
  auto staleness_lr = ParseStalenessLr(spec.staleness_lr);
  PS_CHECK(staleness_lr.ok()) << staleness_lr.status().message();
  staleness_lr_ = *staleness_lr;
  for (const auto& p : params_) {
    PS_CHECK(p.scalar_type() == at::kFloat || p.scalar_type() == at::kDouble)
        << "parameters must be float32 or float64";
  }
  if (applies_each_push()) {
    grad_buffers_.resize(num_workers_);
    for (auto& buffers : grad_buffers_) {
      for (const auto& p : params_) buffers.push_back(at::zeros_like(p));
    }
  } else {
    for (const auto& p : params_) {
      accumulators_.push_back(at::zeros_like(p));
      arrivals_.emplace_back((p.nbytes() + kPieceBytes - 1) / kPieceBytes, 0);
    }
    pushed_.assign(num_workers_, false);
  }
}

ParameterServer::~ParameterServer() = default;

const std::vector<at::Tensor>& ParameterServer::grad_buffer(int w) const {
  PS_CHECK(applies_each_push()) << "grad_buffer in sync mode";
  return grad_buffers_.at(w);
}

Status ParameterServer::CheckPush(int w, uint64_t version) const {
  PS_CHECK(w >= 0 && w < num_workers_) << "worker index " << w;
  if (applies_each_push()) return Status::Ok();
  if (version != version_) {
    return InvalidArgument("push for version " + std::to_string(version) +
                           " while the server is at version " +
                           std::to_string(version_));
  }
  if (pushed_[w]) {
    return InvalidArgument("second push for version " + std::to_string(version));
  }
  return Status::Ok();
}

void ParameterServer::Accumulate(int key, uint64_t offset, const void* data,
                                 uint64_t bytes) {
  at::Tensor& acc = accumulators_.at(key);
  const size_t esize = acc.element_size();
  PS_CHECK(offset % esize == 0 && bytes % esize == 0 &&
           offset + bytes <= acc.nbytes())
      << "bad piece " << offset << "+" << bytes << " of key " << key;
  PS_CHECK(offset % kPieceBytes == 0 &&
           bytes == std::min<uint64_t>(kPieceBytes, acc.nbytes() - offset))
      << "pieces must be whole: " << offset << "+" << bytes;
  // Workers' pieces interleave; count arrivals per piece.
  uint16_t& arrivals = arrivals_[key][offset / kPieceBytes];
  char* base = static_cast<char*>(acc.data_ptr()) + offset;
  if (acc.scalar_type() == at::kFloat) {
    Reduce<float>(base, data, bytes / esize, arrivals, num_workers_);
  } else {
    Reduce<double>(base, data, bytes / esize, arrivals, num_workers_);
  }
  ++arrivals;
}

Result<bool> ParameterServer::Push(int w, uint64_t version) {
  PS_RETURN_IF_ERROR(CheckPush(w, version));
  ++pushes_;
  if (applies_each_push()) {
    // A push from the future (a confused peer) counts as fresh.
    const uint64_t staleness = version_ > version ? version_ - version : 0;
    ++staleness_histogram_[std::min<uint64_t>(staleness, kMaxStaleness)];
    for (size_t k = 0; k < params_.size(); ++k) {
      params_[k].mutable_grad() = grad_buffers_[w][k];
    }
    Step(StalenessScale(staleness_lr_, staleness));
    return true;
  }
  pushed_[w] = true;
  if (++push_count_ < num_workers_) return false;
  // The last push's pieces already divided the sums by the worker count.
  for (size_t k = 0; k < params_.size(); ++k) {
    params_[k].mutable_grad() = accumulators_[k];
  }
  if (discard_step_) {
    ++version_;  // no optimizer step: the parameters stay as they are
    ++discarded_steps_;
    discard_step_ = false;
  } else {
    Step(1.0);
  }
  for (auto& a : arrivals_) std::fill(a.begin(), a.end(), 0);
  pushed_.assign(num_workers_, false);
  push_count_ = 0;
  return true;
}

void ParameterServer::set_version(uint64_t version) {
  PS_CHECK(pushes_ == 0) << "set_version after a push";
  version_ = version;
}

void ParameterServer::Step(double lr_scale) {
  SetLr(*optimizer_, ScheduledLr(schedule_, spec_.lr, version_, schedule_versions_) * lr_scale);
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
