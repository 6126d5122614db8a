// Row-sparse keys (ps/sparse_keys.h): their pushed rows, the sync step's
// row sums, and their RowOptimizers (ps/row_optimizer.h).

#include <algorithm>

#include <ATen/ATen.h>

#include "ps/parameter_server.h"
#include "ps/row_optimizer.h"
#include "util/check.h"

namespace pstrain::ps {

void ParameterServer::MakeRowOptimizers() {
  row_optimizers_.assign(params_.size(), nullptr);
  rows_in_.assign(num_workers_, std::vector<RowsIn>(params_.size()));
  row_adds_.assign(params_.size(), 0);
  touched_.resize(params_.size());
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    PS_CHECK(params_[k].requires_grad() && params_[k].dim() == 2)
        << "row-sparse key " << k << " is not a [rows, row_dim] parameter";
    auto opt = std::make_unique<RowOptimizer>(spec_, params_[k]);
    row_optimizers_[k] = opt.get();
    optimizer_ptrs_.push_back(opt.get());
    optimizers_.push_back(std::move(opt));
    if (!applies_each_push())
      touched_[k] = at::zeros({params_[k].size(0)}, at::kBool);
  }
}

const at::Tensor& ParameterServer::RowsBuffer(int w, int key,
                                              const std::vector<int64_t>& ids) {
  PS_CHECK(is_row_sparse(key)) << "RowsBuffer of dense key " << key;
  RowsIn& in = rows_in_.at(w)[key];
  const int64_t n = static_cast<int64_t>(ids.size());
  // A batch's unique count changes every step: grow the storage, never
  // shrink it, and hand out its first n rows, so that pushes allocate
  // only until the largest batch has been seen.
  if (!in.ids_storage.defined() || in.ids_storage.size(0) < n) {
    in.ids_storage = at::empty({n}, at::kLong);
    in.rows_storage = at::empty({n, params_[key].size(1)},
                                params_[key].options().requires_grad(false));
  }
  in.ids = in.ids_storage.narrow(0, 0, n);
  in.rows = in.rows_storage.narrow(0, 0, n);
  std::copy(ids.begin(), ids.end(), in.ids.data_ptr<int64_t>());
  return in.rows;
}

// The first push of a step adds into zeros: the accumulator rows of a
// row-sparse key are cleared as each step takes them (TakeRowSums).
void ParameterServer::AccumulateRows(int w, int key) {
  const RowsIn& in = rows_in_.at(w)[key];
  accumulators_[key].index_add_(0, in.ids, in.rows);
  touched_[key].index_fill_(0, in.ids, true);
  ++row_adds_[key];
  contributed_[w][piece_base_[key]] = true;  // the worker's push has begun
  step_started_ = true;
}

void ParameterServer::SetPushedRows(int w) {
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    const RowsIn& in = rows_in_[w][k];
    if (!in.ids.defined())
      continue;
    row_optimizers_[k]->SetGradient(in.ids, in.rows);
    rows_stepped_ += static_cast<uint64_t>(in.ids.size(0));
  }
}

void ParameterServer::SumPushedRows() {
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    for (int w = 0; w < num_workers_; ++w) {
      const RowsIn& in = rows_in_[w][k];
      if (!pushed_[w] || !in.ids.defined())
        continue;
      accumulators_[k].index_add_(0, in.ids, in.rows);
      touched_[k].index_fill_(0, in.ids, true);
      ++row_adds_[k];
    }
  }
}

// Divided by the pushes summed, as a dense key's sums are by the worker
// count: a row one worker touched gets g / count, what the dense mean of
// g and zeros gives.
void ParameterServer::TakeRowSums(bool discard) {
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k) || !touched_[k].defined())
      continue;
    const at::Tensor ids = touched_[k].nonzero().squeeze(1);
    if (!discard && row_adds_[k] > 0 && ids.numel() > 0) {
      at::Tensor grad = accumulators_[k].index_select(0, ids);
      grad.div_(row_adds_[k]);
      row_optimizers_[k]->SetGradient(ids, grad);
      rows_stepped_ += static_cast<uint64_t>(ids.numel());
    }
    accumulators_[k].index_fill_(0, ids, 0);
    touched_[k].index_fill_(0, ids, false);
    row_adds_[k] = 0;
  }
}

std::vector<at::Tensor> ParameterServer::PendingRowGradients() const {
  std::vector<at::Tensor> out;
  for (int k = 0; k < num_keys(); ++k) {
    if (is_row_sparse(k) && row_optimizers_[k]->pending_gradient().defined())
      out.push_back(row_optimizers_[k]->pending_gradient());
  }
  return out;
}

void ParameterServer::StepRows(int key, double lr) {
  SetLr(*row_optimizers_[key], lr);
  row_optimizers_[key]->step();
}

}  // namespace pstrain::ps
