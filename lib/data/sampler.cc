#include "data/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "util/check.h"

namespace pstrain::data {
namespace {

constexpr uint64_t kEpochSeedMultiplier = 1000003;

}  // namespace

ShardSampler::ShardSampler(int64_t num_samples, int num_workers,
                           int worker_index, int64_t batch_size, uint64_t seed)
    : num_samples_(num_samples),
      num_workers_(num_workers),
      worker_index_(worker_index),
      batch_size_(batch_size),
      seed_(seed) {
  PS_CHECK(num_samples >= 0) << "num_samples " << num_samples;
  PS_CHECK(num_workers >= 1) << "num_workers " << num_workers;
  PS_CHECK(worker_index >= 0 && worker_index < num_workers)
      << "worker_index " << worker_index << " of " << num_workers;
  PS_CHECK(batch_size >= 1) << "batch_size " << batch_size;
}

int64_t ShardSampler::steps_per_epoch() const {
  return num_samples_ / (num_workers_ * batch_size_);
}

torch::Tensor ShardSampler::BatchIndices(int64_t epoch, int64_t step) {
  PS_CHECK(epoch >= 0) << "epoch " << epoch;
  PS_CHECK(step >= 0 && step < steps_per_epoch())
      << "step " << step << " of " << steps_per_epoch();
  const torch::Tensor& perm = EpochPermutation(epoch);
  int64_t begin = (step * num_workers_ + worker_index_) * batch_size_;
  return perm.slice(/*dim=*/0, begin, begin + batch_size_).clone();
}

torch::Tensor ShardSampler::GlobalBatchPart(int64_t epoch, int64_t step,
                                            int part, int parts) {
  PS_CHECK(epoch >= 0) << "epoch " << epoch;
  PS_CHECK(step >= 0 && step < steps_per_epoch())
      << "step " << step << " of " << steps_per_epoch();
  PS_CHECK(part >= 0 && part < parts) << "part " << part << " of " << parts;
  const torch::Tensor& perm = EpochPermutation(epoch);
  const int64_t global = num_workers_ * batch_size_;
  const int64_t begin = step * global + global * part / parts;
  const int64_t end = step * global + global * (part + 1) / parts;
  return perm.slice(/*dim=*/0, begin, end).clone();
}

const torch::Tensor& ShardSampler::EpochPermutation(int64_t epoch) {
  if (epoch != cached_epoch_) {
    uint64_t epoch_seed =
        seed_ * kEpochSeedMultiplier + static_cast<uint64_t>(epoch);
    at::Generator generator =
        at::make_generator<at::CPUGeneratorImpl>(epoch_seed);
    permutation_ = torch::randperm(num_samples_, generator,
                                   torch::TensorOptions(torch::kInt64));
    cached_epoch_ = epoch;
  }
  return permutation_;
}

}  // namespace pstrain::data
