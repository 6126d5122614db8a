#pragma once
// ParameterServer: the server's training state and update rules, with no
// sockets (the Engine, ps/engine/engine.h, feeds it what workers push). Holds
// the parameters and buffers (one key per tensor, models::ModelState order),
// the version, the step's quorum (changed by Membership alone,
// ps/engine/membership.h), and
//   sync:  one accumulator per key; pushed bytes are added into it piece by
//          piece as they arrive (Accumulate), so memory does not grow with
//          the number of workers;
//   async: one gradient buffer per worker, where its pushed bytes land
//          (ssp: the same; the Engine's SspGate holds the replies);
//   sync with --backup_workers or --step_timeout ("buffered"): one buffer
//          per worker as in async, since a step may close without a push
//          that is already half in.
//
// Update rules (share/doc/design.md; Li et al. OSDI 2014, section 3):
//   sync:  gradients of version t are summed per key in arrival order; when
//          every worker has pushed, the sum is divided by the worker count
//          and the optimizer steps once: version t+1.
//   async: each push steps the optimizer at once: version + 1.
//   buffered sync (Chen et al., "Revisiting Distributed Synchronous SGD",
//          2016, section 3): the step closes when num_workers - b workers
//          have pushed (or CloseStep, on --step_timeout); the pushed
//          gradients are summed in worker order and divided by their count.
//          A push for an older version arrives after its step closed: it is
//          dropped and counted (dropped_pushes).
// The optimizer is libtorch's own (ps/job/optimizer.h), fed the (averaged)
// gradient. With --server_threads T the keys are split into T groups of
// about equal bytes, each with its own optimizer, stepped in parallel on T
// threads: a key only ever by its group's thread, and no lock is shared. Before
// each step every param group's lr is set to the
// --lr_schedule's value at the current version, times (async, ssp) the
// AsyncRecipe's factor (ps/store/async_recipe.h: the push's share of a sync
// step, and the --staleness_lr factor of its staleness, version() minus the
// version it was computed on).
// Not thread-safe: the Engine calls it from its one thread.

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/job_spec.h"
#include "ps/job/optimizer.h"
#include "ps/store/step_order.h"
#include "ps/store/step_sums.h"
#include "util/fanout.h"
#include "util/result.h"
#include "wire/compression.h"

namespace pstrain::ps {

class AsyncRecipe;
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
  /// steps follow it). REQUIRES: before any push.
  void set_version(uint64_t version);

  /// Whether pushes land whole in grad_buffer(w): async, ssp, buffered sync.
  bool buffers_pushes() const { return !grad_buffers_.empty(); }

  /// Where worker `w`'s pushed gradients are read into, tensors of the
  /// params' dtypes and shapes, contiguous. REQUIRES: buffers_pushes() and
  /// 0 <= w < num_workers().
  const std::vector<at::Tensor>& grad_buffer(int w) const;

  /// Whether worker `w` may push gradients computed on `version` now.
  /// Sync (kInvalidArgument): a version other than version() (buffered sync:
  /// a newer one), or a second push in one step. Async, ssp: always ok.
  Status CheckPush(int w, uint64_t version) const;

  /// Sync pushes arrive in pieces of this many bytes of a key (the last
  /// piece of a key may be shorter).
  static constexpr uint64_t kPieceBytes = StepSums::kPieceBytes;

  /// Sync: adds one piece of worker `w`'s gradient (elements of key `key`'s
  /// dtype, bytes [offset, offset + bytes) of the key) into the key's
  /// accumulator; the last worker's piece also divides by the worker count.
  /// Allocates nothing. REQUIRES: sync mode, not buffers_pushes(), CheckPush
  /// passed for this push, a whole piece: offset a multiple of kPieceBytes,
  /// bytes = min(kPieceBytes, rest of the key).
  void Accumulate(int w, int key, uint64_t offset, const void* data,
                  uint64_t bytes);

  /// Sync: as Accumulate, for a whole compressed record of float32 key
  /// `key` (wire/compression.h, `nbytes` bytes, checked by wire::Validate):
  /// it is decoded straight into the key's accumulator, with no decoded
  /// copy, every piece of the key counting as added by `w`. The sum is the
  /// same as Accumulate's of the decoded gradient. Allocates nothing.
  /// REQUIRES: as Accumulate; the key is float32 and no piece of it from
  /// `w` is in yet.
  void AccumulateRecord(int w, int key, wire::Codec codec,
                        const wire::CodecParams& params, const uint8_t* data,
                        uint64_t nbytes);

  /// Worker `w`'s push of gradients computed on `version` is complete (sync:
  /// accumulated; otherwise in grad_buffer(w)). Returns true when a new
  /// version now exists (sync: this push closed the step; async: always).
  /// Errors as CheckPush.
  Result<bool> Push(int w, uint64_t version);

  /// Whether key `key` is row-sparse (see the constructor).
  bool is_row_sparse(int key) const {
    return !rows_.sparse.empty() && rows_.sparse[key];
  }
  /// Rows of the row-sparse keys that sync steps and async pushes updated
  /// so far (each step counts the rows it touched once).
  uint64_t rows_stepped() const { return rows_.stepped; }
  /// Where worker `w`'s rows of row-sparse key `key` are read into: a
  /// contiguous [ids.size(), row_dim] tensor of the key's dtype, which
  /// stays valid until the next RowsBuffer of (w, key). Keeps a copy of
  /// `ids` for the push. REQUIRES: is_row_sparse(key), ids ascending,
  /// unique and below the key's row count (the Engine checks them).
  const at::Tensor& RowsBuffer(int w, int key, const std::vector<int64_t>& ids);
  /// Streaming sync: adds worker `w`'s rows of `key` (read into RowsBuffer)
  /// into the step's sums. Buffered sync, async and ssp need no call: the
  /// rows wait in RowsBuffer for Push or CloseStep. REQUIRES: sync, not
  /// buffers_pushes(), CheckPush passed for this push.
  void AccumulateRows(int w, int key);

  /// Buffered sync: closes the current step with the pushes in so far.
  /// Returns whether it stepped (false when no push is in).
  bool CloseStep();
  /// Sync with one optimizer (--server_threads 1): a closing step advances
  /// the version at once but leaves the optimizer to StepNextKey, key by
  /// key in step_order(), so that each key's parameters can be sent while
  /// the next is stepped. Anything that changes the accumulators or reads
  /// the parameters as a whole first steps what is left (StepAllKeys). Off
  /// by default; elsewhere a no-op.
  void set_step_by_key(bool on);
  /// Steps the next key of the closed step; returns it, or -1 when none is
  /// left.
  int StepNextKey();
  void StepAllKeys() {
    while (StepNextKey() >= 0) {
    }
  }
  /// The order keys are stepped and sent in (ps/store/step_order.h).
  const StepOrder& step_order() const { return order_; }
  /// Sync, by key, before a step's first piece: its keys go in `keys`'
  /// order (a permutation of the keys; false and no change otherwise).
  bool set_step_order(const std::vector<int>& keys);
  /// Every key holds version(): none stepped ahead, none waiting.
  bool version_whole() const { return order_.idle(); }

  /// Whether keys may be stepped before their step closes (StepAhead):
  /// streaming sync stepped by key with one optimizer, no --clip_grad_norm
  /// (it needs every key's gradient) and no row-sparse keys.
  bool steps_ahead() const { return by_key_.ahead; }
  /// Whether key `key` of the step under way may be stepped ahead of its
  /// close: every member's pieces of it are in (its sums are final), it
  /// is not stepped yet, the previous step is whole, and no push of this
  /// step was refused. REQUIRES: steps_ahead().
  bool ReadyAhead(int key) const;
  /// Steps key `key` ahead of its step's close. The version advances only
  /// at the close; the key then holds the next one's value
  /// (step_order().stepped(key)). Bit for bit what the step computes at
  /// its close: libtorch's optimizers are elementwise, and the lr is the
  /// version's. REQUIRES: ReadyAhead(key).
  void StepAhead(int key);
  /// Sync: pushes in for the current version.
  int pushes_this_step() const { return push_count_; }
  /// Buffered sync: late pushes dropped so far.
  uint64_t dropped_pushes() const { return dropped_; }

  /// Worker `w` leaves the step's quorum (it is lost, or in sync done);
  /// in a job only Membership calls this and AddWorker. Sync: a
  /// push it completed for this step still counts; otherwise the step stops
  /// waiting for it, and the pieces it already added stay in their sums
  /// (each element is then the mean of the gradients that reached it).
  /// Returns true when that closed the step (a new version). Async, ssp:
  /// bookkeeping only. REQUIRES: w is a member.
  bool RemoveWorker(int w);
  /// Worker `w` is back. Returns true when it joins the current step (no
  /// push or piece of it is in yet); false when it joins from the next
  /// version on (sync), and always false in async and ssp. REQUIRES: w was
  /// removed.
  bool AddWorker(int w);
  bool is_member(int w) const { return live_[w]; }
  int members() const { return live_count_; }

  /// Sync: the current step is to end without an optimizer step, because a
  /// push in it was refused (a NaN or Inf piece) after some of its pieces
  /// were added: a float sum cannot be taken apart exactly. The refused push
  /// still counts (call Push), so the step closes and the version advances
  /// with the parameters and optimizer state unchanged, the way torch.amp's
  /// GradScaler skips a step whose gradients are not finite. With
  /// steps_ahead() it is called as soon as the refused piece is read, so
  /// that no key is stepped ahead after it (ReadyAhead).
  void DiscardStep() { discards_.pending = true; }
  /// Sync steps that ended without an optimizer step (DiscardStep).
  uint64_t discarded_steps() const { return discards_.count; }

  /// Sync: whether member worker w (0 <= w < num_workers()) has not pushed
  /// for the current version yet.
  bool awaits_push(int w) const { return live_[w] && !pushed_[w]; }
  /// Sync: the member workers that have not pushed for the current version.
  std::vector<int> MissingPushes() const;
  /// Pushes applied or accumulated so far.
  uint64_t pushes() const { return pushes_; }
  /// Async, ssp: by worker, the version the last push applied from it was
  /// computed on, or -1 (a worker's pushes name growing versions, so a
  /// push naming one of these or less was applied already: a standby that
  /// took the shard over drops it, ps/rank/standby.h). Sync: all -1.
  const std::vector<int64_t>& applied() const { return applied_; }
  /// A standby's copy of its primary's applied(). REQUIRES: one per worker.
  void set_applied(std::vector<int64_t> applied);

  /// The Engine is sending worker `w` the parameters as they are now (a
  /// reply of parameters). With --delay_compensation, its next push's
  /// gradient is corrected against them (ps/store/delay_compensation.h); with
  /// --async_momentum lookahead, SentParam(w, k) becomes where momentum
  /// will carry them (ps/store/lookahead.h); else a no-op.
  void NoteParamsSent(int w);
  /// Key `key` as worker `w` is to be sent it: params()[key], or under
  /// --async_momentum lookahead its copy that NoteParamsSent made
  /// (ps/store/lookahead.h). Valid until w's next NoteParamsSent.
  const at::Tensor& SentParam(int w, int key) const;
  /// Bytes the --delay_compensation state holds per worker (0: off).
  uint64_t delay_compensation_bytes_per_worker() const;

  /// Async, ssp: how many pushes had each staleness (index: versions behind;
  /// the last bucket, kMaxStaleness, counts kMaxStaleness or more). Sync: all
  /// zero.
  static constexpr size_t kMaxStaleness = 64;
  const std::vector<uint64_t>& staleness_histogram() const {
    return staleness_histogram_;
  }

 private:
  bool applies_each_push() const;  // RuleTraits::applies_each_push
  // Sets the lr (schedule at version_, times `lr_scale`), steps, version + 1.
  void Step(double lr_scale);
  // Sync: steps on the averaged accumulators and opens the next step.
  void FinishStep();
  // Buffer keys take `values` (one tensor per key, key order).
  void CopyBuffers(const std::vector<at::Tensor>& values);
  // Scales the parameters' gradients to norm <= --clip_grad_norm (if set).
  void ClipGradients();
  // Row-sparse keys (parameter_server_rows.cc): their RowOptimizers, and
  // their state for sync steps.
  void MakeRowOptimizers();
  // Async, ssp: worker w's rows become each key's pending gradient.
  void SetPushedRows(int w);
  // Buffered sync: the pushed workers' rows into the sums.
  void SumPushedRows();
  // Sync: the sums' touched rows over their count become each key's pending
  // gradient (unless `discard`); the sums are cleared.
  void TakeRowSums(bool discard);
  void StepRows(int key, double lr);
  // The row-sparse keys' gradients pending for the next step.
  std::vector<at::Tensor> PendingRowGradients() const;

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
    std::vector<at::Tensor> touched;  // sync, per row-sparse key: bool [rows]
    std::vector<int> adds;            // sync, per key: pushes summed this step
    uint64_t stepped = 0;
  };
  SparseRows rows_;
  // Sync, --server_threads 1: a closed step applied key by key
  // (StepNextKey), at `lr`; `grad`: the key whose gradient is set.
  struct KeyByKey {
    bool on = false;
    bool ahead = false;  // steps_ahead()
    double lr = 0;
    int grad = -1;
  };
  KeyByKey by_key_;
  StepOrder order_;
  // One key's optimizer step, at `lr`.
  void StepKey(int key, double lr);

  LrSchedule schedule_;
  int64_t schedule_versions_;
  // The lr share, staleness factor, DC-ASGD and lookahead of async pushes.
  std::unique_ptr<AsyncRecipe> async_;
  std::vector<uint64_t> staleness_histogram_;
  std::vector<std::vector<at::Tensor>> grad_buffers_;  // async, ssp only
  StepSums sums_;                                      // sync only
  std::vector<bool> live_;                             // members: not lost
  int live_count_ = 0;
  int needed_ = 0;             // sync: complete pushes that close this step
  bool step_started_ = false;  // sync: a push or piece of this step is in
  std::vector<bool> pushed_;   // sync: per worker, this step
  int push_count_ = 0;
  int quorum_;  // buffered sync: pushes that close a step
  uint64_t dropped_ = 0;
  // Sync: whether this step is to be discarded (DiscardStep), and how many
  // were.
  struct Discards {
    bool pending = false;
    uint64_t count = 0;
  };
  Discards discards_;
  uint64_t version_ = 0;
  uint64_t pushes_ = 0;
  std::vector<int64_t> applied_;  // by worker: see applied()
};

}  // namespace pstrain::ps
