#include "worker/lm_stream.h"

#include <torch/torch.h>

#include "ps/job/job_data.h"

namespace pstrain::worker {

LmStream::LmStream(const torch::Tensor& train, int64_t total_columns,
                   int64_t first, int64_t count, int64_t bptt)
    : batches_(data::Batchify(train, total_columns), first, count, bptt) {}

torch::Tensor LmStream::Loss(models::LanguageModel& model, int64_t step,
                             const torch::Device& device, int64_t* tokens) {
  const data::BpttWindow w = batches_.Get(step);
  const int64_t batch = w.input.size(1);
  if (step == 0 || step != last_step_ + 1) {
    state_ = model.InitState(batch);
  } else {
    state_ = models::Detached(state_);
  }
  last_step_ = step;
  auto [out, next] = model.Forward(w.input.to(device), state_);
  state_ = next;
  *tokens = w.target.numel();
  return torch::nll_loss(out, w.target.to(device));
}

Result<std::unique_ptr<LmStream>> OpenWorkerLmStream(
    const ps::JobSpec& spec, const std::string& data_dir, int worker) {
  PS_ASSIGN_OR_RETURN(auto corpus, ps::OpenJobCorpus(spec, data_dir));
  if (corpus->vocab.size() != spec.num_classes) {
    return InvalidArgument("--data_dir " + data_dir + ": the vocabulary has " +
                           std::to_string(corpus->vocab.size()) +
                           " words; rank 0's has " +
                           std::to_string(spec.num_classes));
  }
  const int64_t b = spec.batch_size;
  auto stream = std::make_unique<LmStream>(
      corpus->train, b * spec.num_workers(), worker * b, b, spec.bptt);
  if (stream->steps_per_epoch() == 0) {
    return InvalidArgument("--batch_size " + std::to_string(b) + " x " +
                           std::to_string(spec.num_workers()) +
                           " workers: the training split's " +
                           std::to_string(corpus->train.numel()) +
                           " tokens make fewer than 2 rows");
  }
  return stream;
}

}  // namespace pstrain::worker
