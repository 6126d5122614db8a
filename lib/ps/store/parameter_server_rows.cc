// Row-sparse keys (ps/job/sparse_keys.h): their pushed rows, the sync step's
// row sums, and their RowOptimizers (ps/store/row_optimizer.h).

#include <algorithm>

#include <ATen/ATen.h>

#include "ps/store/parameter_server.h"
#include "ps/store/row_optimizer.h"
#include "util/check.h"

namespace pstrain::ps {

void ParameterServer::MakeRowOptimizers() {
  rows_.optimizers.assign(params_.size(), nullptr);
  rows_.in.assign(num_workers_, std::vector<RowsIn>(params_.size()));
  rows_.adds.assign(params_.size(), 0);
  rows_.touched.resize(params_.size());
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    PS_CHECK(params_[k].requires_grad() && params_[k].dim() == 2)
        << "row-sparse key " << k << " is not a [rows, row_dim] parameter";
    auto opt = std::make_unique<RowOptimizer>(spec_, params_[k]);
    rows_.optimizers[k] = opt.get();
    opt_.ptrs.push_back(opt.get());
    opt_.owned.push_back(std::move(opt));
    if (!applies_each_push())
      rows_.touched[k] = at::zeros({params_[k].size(0)}, at::kBool);
  }
}

const at::Tensor& ParameterServer::RowsBuffer(int w, int key,
                                              const std::vector<int64_t>& ids) {
  PS_CHECK(is_row_sparse(key)) << "RowsBuffer of dense key " << key;
  RowsIn& in = rows_.in.at(w)[key];
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
  const RowsIn& in = rows_.in.at(w)[key];
  sums_.sum(key).index_add_(0, in.ids, in.rows);
  rows_.touched[key].index_fill_(0, in.ids, true);
  ++rows_.adds[key];
  sums_.NoteRows(w, key);  // the worker's push has begun
  step_started_ = true;
}

void ParameterServer::SetPushedRows(int w) {
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    const RowsIn& in = rows_.in[w][k];
    if (!in.ids.defined())
      continue;
    rows_.optimizers[k]->SetGradient(in.ids, in.rows);
    rows_.stepped += static_cast<uint64_t>(in.ids.size(0));
  }
}

void ParameterServer::SumPushedRows() {
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    for (int w = 0; w < num_workers_; ++w) {
      const RowsIn& in = rows_.in[w][k];
      if (!pushed_[w] || !in.ids.defined())
        continue;
      sums_.sum(k).index_add_(0, in.ids, in.rows);
      rows_.touched[k].index_fill_(0, in.ids, true);
      ++rows_.adds[k];
    }
  }
}

// Divided by the pushes summed, as a dense key's sums are by the worker
// count: a row one worker touched gets g / count, what the dense mean of
// g and zeros gives.
void ParameterServer::TakeRowSums(bool discard) {
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k) || !rows_.touched[k].defined())
      continue;
    const at::Tensor ids = rows_.touched[k].nonzero().squeeze(1);
    if (!discard && rows_.adds[k] > 0 && ids.numel() > 0) {
      at::Tensor grad = sums_.sum(k).index_select(0, ids);
      grad.div_(rows_.adds[k]);
      rows_.optimizers[k]->SetGradient(ids, grad);
      rows_.stepped += static_cast<uint64_t>(ids.numel());
    }
    sums_.sum(k).index_fill_(0, ids, 0);
    rows_.touched[k].index_fill_(0, ids, false);
    rows_.adds[k] = 0;
  }
}

std::vector<at::Tensor> ParameterServer::PendingRowGradients() const {
  std::vector<at::Tensor> out;
  for (int k = 0; k < num_keys(); ++k) {
    if (is_row_sparse(k) && rows_.optimizers[k]->pending_gradient().defined())
      out.push_back(rows_.optimizers[k]->pending_gradient());
  }
  return out;
}

void ParameterServer::StepRows(int key, double lr) {
  SetLr(*rows_.optimizers[key], lr);
  rows_.optimizers[key]->step();
}

}  // namespace pstrain::ps
