#pragma once
// BatchCompute: the model on the server (--placement server, the scheme of
// PyTorch's RPC parameter-server tutorial). Each worker's batches run
// forward and backward on a thread of their own, on a replica of the model,
// and the result goes to the Engine as that worker's push would
// (ps/engine/batch_runner.h), so the update rules are the same: sync averages
// the N batches' gradients of a step and steps once, async steps on each.
//
// What the replicas share, as in Hogwild! (Niu et al., NIPS 2011): on the
// CPU, the parameters' memory itself, which every thread's forward reads
// and only the server's optimizer (on the Engine's thread) writes, with no
// lock; in async a step may change a parameter while another thread's
// forward or backward reads it. What they do not share: autograd's state
// (each replica's parameters are tensors of their own over that memory,
// with their own version counters, so a step never trips another thread's
// backward: the in-place error the tutorial meets with two trainers), the
// gradients (each replica's own), and the buffers (BatchNorm's running
// statistics: copied in from the server before each batch and sent back as
// a buffer push). On GPUs (--num_gpus) a replica holds copies instead: the
// parameters and buffers are copied in before each batch and the
// gradients out after it.
// Thread-safe: Run may be called from any one thread while results arrive
// on the compute threads.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/types.h>

#include "models/loss.h"
#include "models/model.h"
#include "ps/engine/batch_runner.h"
#include "util/result.h"

namespace pstrain::ps {

struct BatchComputeOptions {
  /// Replicas, one thread each; worker w's batches run on replica
  /// w % replicas. REQUIRES: >= 1.
  int replicas = 1;
  /// Where a replica lives: empty, the CPU; one device, all of it there;
  /// two, the model's own split (models::Model::Place).
  std::vector<torch::Device> devices;
  models::Loss loss = models::Loss::kNll;
  /// Seeds each thread's dropout draws: seed * 1000 + replica.
  uint64_t seed = 1;
};

class BatchCompute : public BatchRunner {
 public:
  /// Builds the replicas with `make_model` (each a fresh model of the
  /// job's architecture) over `keys`, the server's parameters and buffers
  /// (models::ModelState order, contiguous CPU tensors, shared: the server
  /// steps them in place), and starts their threads. `done` is called on a
  /// compute thread with each result. Errors: make_model's, or kInvalidArgument
  /// when a replica's keys differ from `keys` in number or shape.
  static Result<std::unique_ptr<BatchCompute>> Make(
      const std::vector<at::Tensor>& keys,
      const std::function<Result<std::shared_ptr<models::Model>>()>& make_model,
      BatchComputeOptions options,
      std::function<void(const BatchResult&)> done);
  /// Stops the threads once their current batches are done.
  ~BatchCompute() override;
  BatchCompute(const BatchCompute&) = delete;
  BatchCompute& operator=(const BatchCompute&) = delete;

  void Run(const BatchJob& job) override;

 private:
  struct Replica;
  BatchCompute(const std::vector<at::Tensor>& keys, BatchComputeOptions options,
               std::function<void(const BatchResult&)> done);
  void Loop(Replica& r, int index);
  BatchResult Compute(Replica& r, const BatchJob& job);

  const std::vector<at::Tensor> keys_;  // the server's, shared
  BatchComputeOptions options_;
  std::function<void(const BatchResult&)> done_;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

}  // namespace pstrain::ps
