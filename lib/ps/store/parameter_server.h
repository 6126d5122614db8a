#pragma once
// ParameterServer: one shard's training state, with no mode in it and no
// sockets: the parameters and buffers (one key per tensor,
// models::ModelState order), the optimizers that step them, the lr
// schedule, and the version. How pushes become steps is an update rule's
// (ps/rules/update_rule.h), which sums or keeps the pushed gradients, sets
// them here and steps; who trains is Membership's (ps/engine/membership.h).
//
// The optimizer is libtorch's own (ps/job/optimizer.h). With
// --server_threads T the keys are split into T groups of about equal
// bytes, each with its own optimizer, stepped in parallel on T threads: a
// key only ever by its group's thread, and no lock is shared. Row-sparse
// keys (ps/job/sparse_keys.h) have a RowOptimizer each
// (ps/store/row_optimizer.h), fed the rows a step touched.
// Not thread-safe: the Engine calls it from its one thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/job_spec.h"
#include "ps/job/optimizer.h"
#include "util/fanout.h"

namespace pstrain::ps {

class RowOptimizer;

class ParameterServer {
 public:
  /// `params`: the keys, contiguous CPU tensors; the caller's model keeps
  /// owning them and sees every update. A key that requires grad is a
  /// parameter (float32 or float64, a leaf), trained by the optimizer. One
  /// that does not is a buffer (float32, float64 or int64: BatchNorm's
  /// running statistics and count, models/model_state.h), which the
  /// optimizer never sees: pushes carry its values rather than gradients,
  /// and it becomes the mean of a sync step's pushes (int64: truncated) or,
  /// in async and ssp, each push's values in arrival order. A discarded
  /// step leaves buffers as they are too.
  ///
  /// `row_sparse` (by key; empty: none): the keys that are row-sparse
  /// (ps/job/sparse_keys.h), float [rows, row_dim] parameters updated lazily,
  /// row by row, by a RowOptimizer each (ps/store/row_optimizer.h) rather than
  /// by libtorch's. Their pushes carry rows (RowsBuffer) rather than whole
  /// gradients; a sync step sums each row's gradients over the step's
  /// pushes and divides by their count as for dense keys, then steps the
  /// rows that any push touched; async and ssp step each push's rows.
  ParameterServer(const JobSpec& spec, std::vector<at::Tensor> params,
                  std::vector<bool> row_sparse = {});
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int num_keys() const { return static_cast<int>(params_.size()); }
  int num_workers() const { return num_workers_; }
  uint64_t version() const { return version_; }
  const std::vector<at::Tensor>& params() const { return params_; }

  /// The optimizers stepping params(), one per group of keys, to save or
  /// restore their state (ps/store/checkpoint.h). Live as long as this server.
  const std::vector<torch::optim::Optimizer*>& optimizers() const {
    return opt_.ptrs;
  }

  /// Resume: continues from `version` (the lr schedule and the workers'
  /// steps follow it). REQUIRES: before any step.
  void set_version(uint64_t version);

  /// Pushes arrive in pieces of this many bytes of a key (the last piece
  /// of a key may be shorter).
  static constexpr uint64_t kPieceBytes = 512 * 1024;

  /// Whether key `key` is a buffer (see the constructor): not trained, its
  /// value set by CopyBuffers.
  bool is_buffer(int key) const { return is_buffer_[key]; }
  /// Whether key `key` is row-sparse (see the constructor).
  bool is_row_sparse(int key) const {
    return !rows_.sparse.empty() && rows_.sparse[key];
  }
  /// Whether any key is row-sparse.
  bool has_row_sparse() const;
  /// Whether key `key` is a parameter the dense optimizers step.
  bool is_dense(int key) const {
    return !is_buffer(key) && !is_row_sparse(key);
  }
  /// Rows of the row-sparse keys stepped so far (SetRowGradient's).
  uint64_t rows_stepped() const { return rows_.stepped; }
  /// Where worker `w`'s rows of row-sparse key `key` are read into: a
  /// contiguous [ids.size(), row_dim] tensor of the key's dtype, which
  /// stays valid until the next RowsBuffer of (w, key). Keeps a copy of
  /// `ids` (PushedRowIds). REQUIRES: is_row_sparse(key), ids ascending,
  /// unique and below the key's row count (the Engine checks them), 0 <= w
  /// < num_workers().
  const at::Tensor& RowsBuffer(int w, int key, const std::vector<int64_t>& ids);
  /// The ids (int64 [n]) and rows ([n, row_dim]) of worker `w`'s last
  /// RowsBuffer of `key`; undefined tensors before the first.
  const at::Tensor& PushedRowIds(int w, int key) const {
    return rows_.in.at(w)[key].ids;
  }
  const at::Tensor& PushedRows(int w, int key) const {
    return rows_.in.at(w)[key].rows;
  }

  /// The lr the schedule gives the current version (--lr_schedule).
  double lr() const;
  /// Groups of keys with a dense optimizer each (--server_threads, fewer
  /// when there are fewer keys).
  int dense_groups() const { return opt_.dense; }
  /// Those optimizers, borrowed.
  const std::vector<torch::optim::Optimizer*>& dense_optimizers() const {
    return opt_.dense_ptrs;
  }

  // A step, as a rule takes it: gradients in, (clipped,) stepped.

  /// Each dense key k's gradient becomes grads[k] (shared, not copied):
  /// tensors of the params' dtypes and shapes, one per key.
  void SetGradients(const std::vector<at::Tensor>& grads);
  /// Row-sparse key `key`'s next step updates rows `ids` (int64 [n]) with
  /// gradient rows `rows` ([n, row_dim]); rows_stepped() counts them.
  void SetRowGradient(int key, const at::Tensor& ids, const at::Tensor& rows);
  /// Scales the pending gradients, dense and row-sparse, to a norm of at
  /// most --clip_grad_norm (if set), as libtorch's clip_grad_norm_ does
  /// after one process's backward.
  void ClipGradients();
  /// Every optimizer steps at `lr` on its pending gradients: version + 1.
  void Step(double lr);
  /// One key of a closed step at `lr`, whose version was advanced already
  /// (AdvanceVersion): a buffer key takes `value`, a row-sparse key steps
  /// its pending rows, and any other key steps with `value` as its
  /// gradient. Bit for bit what Step computes for the key: libtorch's
  /// optimizers skip parameters without a gradient and keep their state
  /// per parameter. REQUIRES: dense_groups() <= 1.
  void StepKey(int key, const at::Tensor& value, double lr);
  /// A new version without an optimizer step (a step applied key by key
  /// afterwards, or skipped).
  void AdvanceVersion() { ++version_; }
  /// Buffer keys take `values` (one tensor per key, key order).
  void CopyBuffers(const std::vector<at::Tensor>& values);
  /// The lr of the Step that made `version`, when Step made it and it is
  /// the current version; nullopt when AdvanceVersion did (a step taken key
  /// by key, or skipped), or when it is past.
  std::optional<double> StepLr(uint64_t version) const;
  /// A standby's replay of its primary's step (wire::StepRecord; Li et
  /// al., OSDI 2014, section 4.3): every dense key steps with values[k]
  /// (the gradient the primary stepped with, after its clipping) as its
  /// gradient at `lr`, and every buffer key takes values[k]; version + 1.
  /// From the primary's state before the step, bit for bit the primary's
  /// step: the same libtorch arithmetic on the same operands. `values`:
  /// one tensor per key of the params' dtypes and shapes, borrowed until
  /// the next step. REQUIRES: !has_row_sparse().
  void Replay(const std::vector<at::Tensor>& values, double lr);
  /// A push was applied or accumulated.
  void CountPush() { ++pushes_; }
  /// Pushes applied or accumulated so far.
  uint64_t pushes() const { return pushes_; }

 private:
  void MakeRowOptimizers();
  void StepRows(int key, double lr);
  // The row-sparse keys' gradients pending for the next step.
  std::vector<at::Tensor> PendingRowGradients() const;
  // Clears every dense key's gradient.
  void ClearGradients();

  JobSpec spec_;
  int num_workers_;
  std::vector<at::Tensor> params_;
  std::vector<bool> is_buffer_;  // per key: not trained (see constructor)
  // The optimizers, one per group of keys: [0, dense) libtorch's, the rest
  // RowOptimizers; `ptrs` the same, borrowed, for optimizers().
  struct Optimizers {
    std::vector<std::unique_ptr<torch::optim::Optimizer>> owned;
    std::vector<torch::optim::Optimizer*> ptrs;
    int dense = 0;
    std::vector<torch::optim::Optimizer*> dense_ptrs;  // ptrs[0, dense)
    std::unique_ptr<Fanout> stepper;                   // steps them in parallel
  };
  Optimizers opt_;
  // Row-sparse keys (parameter_server_rows.cc).
  struct RowsIn {
    at::Tensor ids;   // int64 [n]: the first n of ids_storage
    at::Tensor rows;  // [n, row_dim]: the first n of rows_storage
    at::Tensor ids_storage, rows_storage;  // the largest n so far
  };
  struct SparseRows {
    std::vector<bool> sparse;               // per key, or empty: none
    std::vector<RowOptimizer*> optimizers;  // per key, or null
    std::vector<std::vector<RowsIn>> in;    // [worker][key]
    uint64_t stepped = 0;
  };
  SparseRows rows_;
  // The dense key whose gradient alone is set after StepKey; -1: whatever
  // SetGradients set.
  int grad_key_ = -1;
  LrSchedule schedule_;
  int64_t schedule_versions_;
  uint64_t version_ = 0;
  uint64_t pushes_ = 0;
  // The version the last Step made, and its lr.
  struct {
    uint64_t version = 0;
    double lr = 0;
  } last_step_;
};

}  // namespace pstrain::ps
