#pragma once
// ParameterServer: the server's training state and update rules, with no
// sockets (the Service in ps/service.h puts it on the network). Holds the
// parameters (one key per tensor, in named_parameters() order), the version,
// and
//   sync:  one accumulator per key; pushed bytes are added into it piece by
//          piece as they arrive (Accumulate), so memory does not grow with
//          the number of workers;
//   async: one gradient buffer per worker, where its pushed bytes land
//          (ssp: the same; the Service does the blocking).
//
// Update rules (DESIGN.md; Li et al. OSDI 2014, section 3):
//   sync:  gradients of version t are summed per key in arrival order; when
//          every worker has pushed, the sum is divided by the worker count
//          and the optimizer steps once: version t+1.
//   async: each push steps the optimizer at once: version + 1.
// The optimizer is libtorch's own (ps/optimizer.h), fed the (averaged)
// gradient. Before each step every param group's lr is set to the
// --lr_schedule's value at the current version, times (async, ssp) the
// --staleness_lr factor of the push's staleness (version() minus the version
// it was computed on).
// Not thread-safe: the Service calls it from one thread.

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job_spec.h"
#include "ps/optimizer.h"
#include "util/result.h"

namespace pstrain::ps {

class ParameterServer {
 public:
  /// `params`: leaf tensors (requires_grad), contiguous, CPU, float32 or
  /// float64; the caller's model keeps owning them and sees every update.
  ParameterServer(const JobSpec& spec, std::vector<at::Tensor> params);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int num_keys() const { return static_cast<int>(params_.size()); }
  int num_workers() const { return num_workers_; }
  Mode mode() const { return spec_.mode; }
  uint64_t version() const { return version_; }
  const std::vector<at::Tensor>& params() const { return params_; }

  /// The optimizer stepping params(), to save or restore its state
  /// (ps/checkpoint.h). Lives as long as this server.
  torch::optim::Optimizer& optimizer() { return *optimizer_; }

  /// Resume: continues from `version` (the lr schedule and the workers'
  /// steps follow it). REQUIRES: before any push.
  void set_version(uint64_t version);

  /// Async, ssp: where worker `w`'s pushed gradients are read into, tensors
  /// of the params' dtypes and shapes, contiguous. REQUIRES: async or ssp and
  /// 0 <= w < num_workers().
  const std::vector<at::Tensor>& grad_buffer(int w) const;

  /// Whether worker `w` may push gradients computed on `version` now.
  /// Sync (kInvalidArgument): a version other than version(), or a second
  /// push in one step. Async, ssp: always ok.
  Status CheckPush(int w, uint64_t version) const;

  /// Sync pushes arrive in pieces of this many bytes of a key (the last
  /// piece of a key may be shorter).
  static constexpr uint64_t kPieceBytes = 512 * 1024;

  /// Sync: adds one piece of gradient (elements of key `key`'s dtype, bytes
  /// [offset, offset + bytes) of the key) into the key's accumulator; the
  /// last worker's piece also divides by the worker count. Allocates
  /// nothing. REQUIRES: sync mode, CheckPush passed for this push, a whole
  /// piece: offset a multiple of kPieceBytes, bytes = min(kPieceBytes,
  /// rest of the key).
  void Accumulate(int key, uint64_t offset, const void* data, uint64_t bytes);

  /// Worker `w`'s push of gradients computed on `version` is complete (sync:
  /// accumulated; async: in grad_buffer(w)). Returns true when a new version
  /// now exists (sync: this push closed the step; async: always). Errors as
  /// CheckPush.
  Result<bool> Push(int w, uint64_t version);

  /// Sync: the current step is to end without an optimizer step, because a
  /// push in it was refused (a NaN or Inf piece) after some of its pieces
  /// were added: a float sum cannot be taken apart exactly. The refused push
  /// still counts (call Push), so the step closes and the version advances
  /// with the parameters and optimizer state unchanged, the way torch.amp's
  /// GradScaler skips a step whose gradients are not finite.
  void DiscardStep() { discard_step_ = true; }
  /// Sync steps that ended without an optimizer step (DiscardStep).
  uint64_t discarded_steps() const { return discarded_steps_; }

  /// Sync: the workers that have not pushed for the current version.
  std::vector<int> MissingPushes() const;
  /// Pushes applied or accumulated so far.
  uint64_t pushes() const { return pushes_; }

  /// Async, ssp: how many pushes had each staleness (index: versions behind;
  /// the last bucket, kMaxStaleness, counts kMaxStaleness or more). Sync: all
  /// zero.
  static constexpr size_t kMaxStaleness = 64;
  const std::vector<uint64_t>& staleness_histogram() const {
    return staleness_histogram_;
  }

 private:
  bool applies_each_push() const { return spec_.mode != Mode::kSync; }
  // Sets the lr (schedule at version_, times `lr_scale`), steps, version + 1.
  void Step(double lr_scale);

  JobSpec spec_;
  int num_workers_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  LrSchedule schedule_;
  int64_t schedule_versions_;
  StalenessLr staleness_lr_;
  std::vector<uint64_t> staleness_histogram_;
  std::vector<std::vector<at::Tensor>> grad_buffers_;  // async, ssp only
  std::vector<at::Tensor> accumulators_;               // sync only
  std::vector<std::vector<uint16_t>> arrivals_;        // sync: per piece
  std::vector<bool> pushed_;  // sync: per worker, this step
  int push_count_ = 0;
  bool discard_step_ = false;  // sync: see DiscardStep
  uint64_t discarded_steps_ = 0;
  uint64_t version_ = 0;
  uint64_t pushes_ = 0;
};

}  // namespace pstrain::ps
