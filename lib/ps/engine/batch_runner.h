#pragma once
// BatchRunner: the seam between the Engine and whatever runs forward and
// backward on the batches workers send under --placement server (the RPC
// tutorial's scheme: the model lives on the server). The Engine hands it a
// batch with Run and hears of the result through Engine::OnBatchDone, on
// its own thread; ps/service/batch_compute.h is the real one, tests use a fake.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/engine_clock.h"
#include "util/status.h"

namespace pstrain::ps {

/// One worker's batch, to run on the model as it is now.
struct BatchJob {
  PeerId peer = 0;
  uint64_t request_id = 0;  // of the push_batch, for the reply
  int worker = 0;           // rank - num_servers
  /// The server's version when the batch was handed over: the parameters
  /// it is computed on (async: its staleness is counted from it).
  uint64_t version = 0;
  at::Tensor x;  // float32 [b, ...], CPU, contiguous
  at::Tensor y;  // int64 [b] or float32 [b, ...], CPU, contiguous
};

/// What a BatchJob gave.
struct BatchResult {
  PeerId peer = 0;
  uint64_t request_id = 0;
  int worker = 0;
  uint64_t version = 0;
  /// Ok, or why forward or backward failed (kInvalidArgument naming the
  /// batch's shapes and libtorch's reason).
  Status status;
  double loss = 0;  // the batch's mean loss
  /// By key (models::ModelState order): a parameter's gradient, a buffer's
  /// values after forward (BatchNorm's statistics), as a worker's push
  /// carries them; contiguous CPU tensors of the keys' shapes and dtypes.
  /// Borrowed: valid until the same worker's next job runs.
  const std::vector<at::Tensor>* keys = nullptr;
};

/// What a batch must look like, from rank 0's test set: the model's input
/// sample (x is [b, x_sample...], float32) and target (y is [b,
/// y_sample...], int64 class indices or float32 regression targets).
struct BatchShapes {
  std::vector<int64_t> x_sample;
  std::vector<int64_t> y_sample;
  bool y_float = false;
};

class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  /// Starts running `job` and returns at once. `job.x` and `job.y` stay
  /// untouched until its result is in. At most one job per worker runs at
  /// a time.
  virtual void Run(const BatchJob& job) = 0;
};

}  // namespace pstrain::ps
