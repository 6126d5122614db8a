#pragma once
// LmStream: the training windows of one worker (or of a single process) on
// a text corpus, as pytorch/examples' word_language_model trains: the
// training split laid out in `total_columns` contiguous streams
// (data::Batchify), of which this one takes its own columns; step i of an
// epoch is BPTT window i, and the LSTM state the previous window left is
// carried into it, detached. N workers of batch b, worker w taking columns
// [w*b, (w+1)*b) of N*b, see together exactly what one process of batch N*b
// sees, window by window. Not thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "data/bptt_batches.h"
#include "models/language_model.h"
#include "ps/job/job_spec.h"
#include "util/result.h"

namespace pstrain::worker {

class LmStream {
 public:
  /// train: int64 [n], the training split's ids. REQUIRES: 0 <= first,
  /// count >= 1, first + count <= total_columns, bptt >= 1.
  LmStream(const torch::Tensor& train, int64_t total_columns, int64_t first,
           int64_t count, int64_t bptt);
  LmStream(const LmStream&) = delete;
  LmStream& operator=(const LmStream&) = delete;

  /// Windows in one epoch; 0 when the split is too short for the columns
  /// (fewer than 2 rows).
  int64_t steps_per_epoch() const { return batches_.size(); }

  /// Window `step`'s input, int64 [len, b]: the ids its forward looks up.
  /// REQUIRES: 0 <= step < steps_per_epoch().
  torch::Tensor Input(int64_t step) const { return batches_.Get(step).input; }

  /// Forward of window `step` of an epoch: returns the mean NLL over its
  /// target tokens (with its graph, for backward) and sets *tokens to their
  /// number. The state starts at zeros at window 0 and whenever the last
  /// call was not for step - 1 (a sync worker that jumped ahead); otherwise
  /// it is the last call's, detached. REQUIRES: 0 <= step <
  /// steps_per_epoch().
  torch::Tensor Loss(models::LanguageModel& model, int64_t step,
                     const torch::Device& device, int64_t* tokens);

 private:
  data::BpttBatches batches_;
  models::LmState state_;
  int64_t last_step_ = -1;
};

/// Worker `worker` (0-based) of the job: columns [w*b, (w+1)*b) of the
/// training split of the job's corpus (read from `data_dir`) in N*b
/// streams, b = spec.batch_size, N = spec.num_workers(). kInvalidArgument
/// when the corpus's vocabulary is not spec.num_classes (rank 0's) or the
/// split makes no window; the corpus's own errors (ps::OpenJobCorpus).
Result<std::unique_ptr<LmStream>> OpenWorkerLmStream(
    const ps::JobSpec& spec, const std::string& data_dir, int worker);

}  // namespace pstrain::worker
