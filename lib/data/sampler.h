#pragma once
// ShardSampler: which samples a worker trains on, batch by batch.
//
// Every epoch has ONE global permutation of all N samples, drawn by
// torch::randperm from a CPU generator seeded with seed * 1000003 + epoch
// (uint64 arithmetic). Global batch `step` is perm[step*W*b, (step+1)*W*b)
// for W workers of batch b; worker `worker_index` takes the slice
// [worker_index*b, (worker_index+1)*b) of it. Hence the W workers of one
// step see disjoint samples whose concatenation, in worker order, is exactly
// the batch that one process with batch W*b sees at that step: sync training
// with W workers is the same computation as one process with batch W*b.
// Every worker runs steps_per_epoch() = floor(N / (W*b)) steps; the last
// N mod (W*b) samples of each permutation are skipped that epoch.
//
// Not thread-safe (BatchIndices caches the current epoch's permutation).

#include <cstdint>

#include <torch/types.h>

namespace pstrain::data {

class ShardSampler {
 public:
  /// REQUIRES (PS_CHECK): num_samples >= 0, num_workers >= 1,
  /// 0 <= worker_index < num_workers, batch_size >= 1.
  ShardSampler(int64_t num_samples, int num_workers, int worker_index,
               int64_t batch_size, uint64_t seed);

  /// floor(num_samples / (num_workers * batch_size)); may be 0.
  int64_t steps_per_epoch() const;

  /// int64 [batch_size], CPU: the dataset rows of this worker's batch at
  /// `step` of `epoch`. Computing an epoch's permutation costs O(N); it is
  /// cached, so call with epochs in order.
  /// REQUIRES (PS_CHECK): epoch >= 0, 0 <= step < steps_per_epoch().
  torch::Tensor BatchIndices(int64_t epoch, int64_t step);

  /// int64 [about num_workers * batch_size / parts], CPU: part `part` of
  /// `parts` of the global batch at `step` (rows [part*G/parts,
  /// (part+1)*G/parts) of it, G = num_workers * batch_size): the batches
  /// when only `parts` workers share a step (--reassign_shards).
  /// REQUIRES (PS_CHECK): as BatchIndices, and 0 <= part < parts.
  torch::Tensor GlobalBatchPart(int64_t epoch, int64_t step, int part,
                                int parts);

 private:
  const torch::Tensor& EpochPermutation(int64_t epoch);

  int64_t num_samples_;
  int num_workers_;
  int worker_index_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  torch::Tensor permutation_;  // int64 [N] for cached_epoch_
};

}  // namespace pstrain::data
