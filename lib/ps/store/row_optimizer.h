#pragma once
// RowOptimizer: the lazy, row-wise optimizer of one row-sparse key (an
// embedding table [rows, row_dim]; ps/job/sparse_keys.h). A step updates only
// the rows its gradient names, each with its optimizer state beside it in
// tensors of the table's row count, as TensorFlow's SparseApply* kernels
// and the embedding servers of Persia and Monolith do:
//
//   sgd, momentum 0: p[r] -= lr * g[r]. What libtorch's dense SGD computes
//       on a gradient that is 0 outside the named rows: a row with no
//       gradient does not move.
//   adagrad: sum[r] += g[r]^2; p[r] -= lr * g[r] / (sqrt(sum[r]) + eps).
//       What libtorch's dense Adagrad computes on such a gradient: a row
//       with no gradient keeps its parameters and its sum.
//   sgd with momentum: lazy momentum, as TensorFlow's SparseApplyMomentum
//       (and its LazyAdam's reasoning): buf[r] = momentum * buf[r] + g[r],
//       p[r] -= lr * buf[r] (nesterov: lr * (g[r] + momentum * buf[r])),
//       for the named rows only; an untouched row's buffer neither decays
//       nor moves it. Dense momentum would move every row every step, so
//       this is not the dense result: a row moves only on steps that use it.
//   adam: LazyAdam, as PyTorch's torch.optim.SparseAdam and TensorFlow
//       Addons' tfa.optimizers.LazyAdam: a row's moments m[r], v[r] move
//       only on the steps that touch it. Its bias correction counts the
//       row's own updates (step[r]), so a row first seen late gets the
//       corrected first step that a fresh Adam would give it; SparseAdam
//       and LazyAdam count the table's steps instead.
//
// HasLazyRows(spec) (ps/job/sparse_keys.h) says which jobs it serves: sgd,
// adagrad and adam with no weight decay (a decay would move every row every
// step); for others a table stays dense. It is a torch::optim::Optimizer so
// that the server's SetLr, checkpoints (SerializeOptimizerState) and snapshots
// take it as they take libtorch's; save() and load() write and read its state
// tensors. Not thread-safe; the table is borrowed and must outlive it.

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include "ps/job/job_spec.h"

namespace pstrain::ps {

class RowOptimizer : public torch::optim::Optimizer {
 public:
  /// `table`: float32 or float64 [rows, row_dim], contiguous, a leaf; its
  /// storage is updated in place. REQUIRES: HasLazyRows(spec).
  RowOptimizer(const JobSpec& spec, at::Tensor table);

  /// The next step() updates rows `ids` (int64 [n], ascending, unique, each
  /// below the row count) with gradient `grad` ([n, row_dim], the table's
  /// dtype). Borrowed until that step.
  void SetGradient(at::Tensor ids, at::Tensor grad);
  /// The gradient SetGradient set for the next step ([n, row_dim]); an
  /// undefined tensor when none is pending. Scaling it in place scales the
  /// step (--clip_grad_norm).
  const at::Tensor& pending_gradient() const { return grad_; }
  /// Applies the gradient set by SetGradient, once, at the lr of the param
  /// group (SetLr); without one it does nothing.
  at::Tensor step(LossClosure closure = nullptr) override;

  /// State tensors by name ("momentum_buffer", "sum", "exp_avg",
  /// "exp_avg_sq", "step"), for tests and checkpoints.
  const std::vector<std::pair<std::string, at::Tensor>>& state_tensors() const {
    return state_;
  }
  void save(torch::serialize::OutputArchive& archive) const override;
  /// Reads what save() wrote; throws (as libtorch's optimizers do) when a
  /// tensor is missing or of another shape.
  void load(torch::serialize::InputArchive& archive) override;

 private:
  enum class Kind { kSgd, kMomentum, kAdagrad, kAdam };
  at::Tensor& State(size_t i) { return state_[i].second; }

  Kind kind_;
  JobSpec spec_;
  at::Tensor table_;
  std::vector<std::pair<std::string, at::Tensor>> state_;
  at::Tensor ids_, grad_;  // the pending step's
};

}  // namespace pstrain::ps
