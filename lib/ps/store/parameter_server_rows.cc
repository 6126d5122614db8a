// Row-sparse keys (ps/job/sparse_keys.h): their pushed rows and their
// RowOptimizers (ps/store/row_optimizer.h).

#include <algorithm>

#include <ATen/ATen.h>

#include "ps/store/parameter_server.h"
#include "ps/store/row_optimizer.h"
#include "util/check.h"

namespace pstrain::ps {

void ParameterServer::MakeRowOptimizers() {
  rows_.optimizers.assign(params_.size(), nullptr);
  rows_.in.assign(num_workers_, std::vector<RowsIn>(params_.size()));
  for (int k = 0; k < num_keys(); ++k) {
    if (!is_row_sparse(k))
      continue;
    PS_CHECK(params_[k].requires_grad() && params_[k].dim() == 2)
        << "row-sparse key " << k << " is not a [rows, row_dim] parameter";
    auto opt = std::make_unique<RowOptimizer>(spec_, params_[k]);
    rows_.optimizers[k] = opt.get();
    opt_.ptrs.push_back(opt.get());
    opt_.owned.push_back(std::move(opt));
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

void ParameterServer::SetRowGradient(int key, const at::Tensor& ids,
                                     const at::Tensor& rows) {
  rows_.optimizers[key]->SetGradient(ids, rows);
  rows_.stepped += static_cast<uint64_t>(ids.size(0));
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
