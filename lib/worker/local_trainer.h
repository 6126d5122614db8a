#pragma once
// TrainLocally: the training loop without a parameter server. One process
// trains the model with libtorch's own optimizer (SGD by default) on its own
// batches (a text corpus: its BPTT windows, worker/lm_stream.h), then scores
// it on the test set: the baseline ("single") that `pstrain bench train`
// compares the sync and async modes with. Not thread-safe (it seeds and
// draws from torch's global generator); one call at a time per process.

#include <cstdint>
#include <string>

#include "ps/job/job_spec.h"
#include "util/result.h"

namespace pstrain::worker {

struct LocalTrainOptions {
  /// The job as launch would train it (ps/job/job_fields.inc); of its fields
  /// the single process uses model, loss (a TorchScript model's), dataset,
  /// image_size, data_threads, vocab_size, bptt and the language model's
  /// sizes, the optimizer's (ps::MakeOptimizer: optimizer, lr, momentum,
  /// ...), lr_schedule (over `steps`: step t uses the lr a sync server
  /// uses for version t), clip_grad_norm, seed (the initial model, the
  /// shuffle, dropout), batch_size (samples per step; text: streams),
  /// target_accuracy and eval_interval (in steps; with a target, the
  /// evaluations' time is not counted and the run stops at the first that
  /// reaches it). REQUIRES: batch_size <= the training set's size.
  ps::JobSpec job;
  /// Optimizer steps to run; epochs follow one another as needed.
  /// REQUIRES: >= 1. Default: 200.
  int64_t steps = 200;
  /// The data set's directory; "" = Debian's place for the data set.
  std::string data_dir;
  /// libtorch intra-op threads for the run (at::set_num_threads; the
  /// previous count is restored afterwards). 0: leave libtorch's count.
  /// Default: 0.
  int threads = 0;
  /// Where the model trains: "cpu", "cuda" or "cuda:i" (ParseDevice;
  /// dataset "text": cpu only). Default: "cpu".
  std::string device = "cpu";
};

struct LocalRunStats {
  int64_t steps = 0;
  int threads = 0;  ///< libtorch intra-op threads the run used
  /// Samples of those steps (less skipped ones); text: target tokens.
  int64_t samples = 0;
  int64_t skipped_samples = 0;  ///< left out as undecodable
  /// Seconds of the training loop only (not loading, not the evaluation).
  double wall_seconds = 0;
  double samples_per_second = 0;  ///< samples / wall_seconds
  double test_accuracy = 0;       ///< 0..1, on the whole test set
  double test_loss = 0;           ///< mean NLL on the test set
  double test_perplexity = 0;     ///< text: exp(test_loss); else 0
  /// With a target: training seconds and steps until the evaluation that
  /// reached it; -1 when none did.
  double time_to_target_seconds = -1;
  int64_t steps_to_target = -1;
};

/// Loads the data set, builds the model from job.seed, runs `steps` steps of
/// forward / loss (nll, or a TorchScript model's --loss) / backward /
/// (clip) / optimizer step on batches drawn
/// by data::ShardSampler(N, 1, 0, batch_size, seed), then evaluates. With
/// dataset "text": windows i = step % windows of the training split in
/// batch_size streams, then the test perplexity (ps::MakeLmEvaluator).
/// Errors: kInvalidArgument for an unknown model, a bad option or a
/// batch larger than the training set; OpenSource's errors (kNotFound for
/// missing files, kInvalidArgument for bad ones).
Result<LocalRunStats> TrainLocally(const LocalTrainOptions& options);

}  // namespace pstrain::worker
