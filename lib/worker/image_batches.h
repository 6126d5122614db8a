#pragma once
// ImageBatches: one worker's batches of an image (or IDX) data set, read
// ahead on --data_threads threads. Global step g = epoch * steps_per_epoch()
// + step is the worker's shard of the sampler's batch g (data::ShardSampler)
// or, with --reassign_shards after a worker was lost, its part of the
// global batch shared by the workers the server names. Not thread-safe: the
// training thread's.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "data/batch_loader.h"
#include "data/sampler.h"
#include "data/source.h"
#include "ps/job/job_spec.h"
#include "report/event_log.h"
#include "util/result.h"

namespace pstrain::worker {

class ImageBatches {
 public:
  /// Worker `worker` (0-based) of `spec`'s job over the training split in
  /// `data_dir`. kInvalidArgument when the split's shape is not rank 0's
  /// (ps::CheckInputShape) or it has fewer than batch_size x workers
  /// samples; the source's own errors (ps::OpenJobSource).
  static Result<std::unique_ptr<ImageBatches>> Open(const ps::JobSpec& spec,
                                                    const std::string& data_dir,
                                                    int worker,
                                                    report::EventLog* log);

  int64_t steps_per_epoch() const { return sampler_.steps_per_epoch(); }
  /// The training split the batches are read from.
  const data::Source& source() const { return *train_; }

  /// The batch of global step `global`. The loader holds the next requests
  /// in step order (up to `end`, exclusive) and is cleared when `global` is
  /// not the one it expected (a sync worker jumped ahead, a step was
  /// redone) or `members` (the workers sharing the batches, by worker
  /// index) changed under --reassign_shards.
  data::Batch Next(int64_t global, int64_t end,
                   const std::vector<uint32_t>& members);

 private:
  ImageBatches(const ps::JobSpec& spec, int worker,
               std::unique_ptr<data::Source> train);
  torch::Tensor Indices(int64_t epoch, int64_t step);
  void Request(int64_t end);

  ps::JobSpec spec_;
  uint32_t worker_;
  std::unique_ptr<data::Source> train_;
  data::ShardSampler sampler_;
  // Reads train_: declared after it, so that it goes first.
  data::BatchLoader loader_;
  int depth_;
  int64_t next_request_ = 0;       // the global step to request next
  std::vector<uint32_t> members_;  // those the requested batches assumed
};

}  // namespace pstrain::worker
