#include "worker/image_batches.h"

#include <algorithm>
#include <utility>

#include "ps/job/job_data.h"

namespace pstrain::worker {

Result<std::unique_ptr<ImageBatches>> ImageBatches::Open(
    const ps::JobSpec& spec, const std::string& data_dir, int worker,
    report::EventLog* log) {
  PS_ASSIGN_OR_RETURN(
      auto train, ps::OpenJobSource(spec, data_dir, data::Split::kTrain, log));
  if (spec.input_channels > 0)
    PS_RETURN_IF_ERROR(ps::CheckInputShape(spec, data_dir, train->shape()));
  const int64_t num_samples = train->size();
  if (spec.batch_size > num_samples / spec.num_workers()) {
    return InvalidArgument("--batch_size " + std::to_string(spec.batch_size) +
                           " x " + std::to_string(spec.num_workers()) +
                           " workers exceeds the " +
                           std::to_string(num_samples) + " training samples");
  }
  return std::unique_ptr<ImageBatches>(
      new ImageBatches(spec, worker, std::move(train)));
}

ImageBatches::ImageBatches(const ps::JobSpec& spec, int worker,
                           std::unique_ptr<data::Source> train)
    : spec_(spec),
      worker_(static_cast<uint32_t>(worker)),
      train_(std::move(train)),
      sampler_(train_->size(), spec.num_workers(), worker, spec.batch_size,
               spec.seed),
      loader_(*train_, spec.data_threads, spec.data_threads + 1),
      depth_(spec.data_threads + 1) {}

data::Batch ImageBatches::Next(int64_t global, int64_t end,
                               const std::vector<uint32_t>& members) {
  if ((spec_.reassign_shards && members != members_) ||
      (loader_.pending() > 0 && loader_.front_tag() != global)) {
    loader_.Clear();
  }
  members_ = members;
  if (loader_.pending() == 0)
    next_request_ = global;
  Request(end);
  data::Batch batch = loader_.Take();
  Request(end);
  return batch;
}

// With --reassign_shards after a loss: this worker's part of the global
// batch shared by the members.
torch::Tensor ImageBatches::Indices(int64_t epoch, int64_t step) {
  auto it = std::find(members_.begin(), members_.end(), worker_);
  if (!spec_.reassign_shards || it == members_.end())
    return sampler_.BatchIndices(epoch, step);
  return sampler_.GlobalBatchPart(epoch, step,
                                  static_cast<int>(it - members_.begin()),
                                  static_cast<int>(members_.size()));
}

void ImageBatches::Request(int64_t end) {
  const int64_t per_epoch = steps_per_epoch();
  while (loader_.pending() < depth_ && next_request_ < end) {
    const int64_t epoch = next_request_ / per_epoch;
    loader_.Request(next_request_, Indices(epoch, next_request_ % per_epoch),
                    epoch);
    ++next_request_;
  }
}

}  // namespace pstrain::worker
