#pragma once
// BatchDesk: --placement server, the RPC tutorial's scheme, as the Engine
// receives it: a worker's batch (push_batch) is checked against the
// model's shapes from its descriptors, before a byte of it is read, and
// read into tensors kept per worker (reused while their shapes stay); the
// BatchRunner runs forward and backward on the server's model; and what it
// gives goes into the update rule as that worker's push would, each piece
// checked for NaN and Inf. Without a runner (the default) the job trains
// on the workers and push_batch is refused.
//
// Threading: not thread-safe; the Engine's thread only.

#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/batch_runner.h"
#include "ps/engine/outbox.h"
#include "ps/engine/read_plan.h"
#include "util/result.h"
#include "util/status.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct Peer;
struct WorkerPeer;

class BatchDesk {
 public:
  /// Batches go to `runner`, which must outlive the desk, and must be
  /// shaped as `shapes` says.
  void set_runner(BatchRunner* runner, BatchShapes shapes) {
    runner_ = runner;
    shapes_ = std::move(shapes);
  }
  /// Whether the model is on the server (a runner is set).
  bool on() const { return runner_ != nullptr; }

  /// A batch's descriptors against the model's shapes (b rows of x float32
  /// [b, x_sample...], y [b, y_sample...] of the target's dtype).
  /// kInvalidArgument naming both shapes ("push_batch: x is float32 [8, 7];
  /// the model takes float32 [B, 5]").
  Status Check(const wire::PushBatch& batch) const;
  /// A push_batch's meta from `peer`: a registered worker's, one batch at
  /// a time, decoded into its batch.msg, and checked (Check; a misfit is
  /// logged to `outbox` naming the rank). Returns the worker, or
  /// kInvalidArgument saying why not (the job trains on the workers, no
  /// register yet, a batch still computing, a misfit).
  Result<WorkerPeer*> Accept(Peer& peer, std::string_view meta,
                             Outbox& outbox) const;
  /// Appends to `*plan` where the x and y bytes of `peer`'s batch
  /// (peer.batch.msg, checked) land: its tensors, reused while their shapes
  /// stay.
  static void Plan(WorkerPeer& peer, ReadPlan* plan);
  /// `peer`'s batch is in: runs it on the model, computed on `version`.
  /// `id`: the request it answers. REQUIRES: on().
  void Run(WorkerPeer& peer, uint64_t id, uint64_t version) const;

 private:
  BatchRunner* runner_ = nullptr;
  BatchShapes shapes_;
};

}  // namespace pstrain::ps
