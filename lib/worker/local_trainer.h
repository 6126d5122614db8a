#pragma once
// TrainLocally: the training loop without a parameter server. One process
// trains the model with libtorch's own optimizer (SGD by default) on its own
// batches (a text corpus: its BPTT windows, worker/lm_stream.h), then scores
// it on the test set: the baseline ("single") that `pstrain bench train`
// compares the sync and async modes with. Not thread-safe (it seeds and
// draws from torch's global generator); one call at a time per process.

#include <cstdint>
#include <string>

#include "models/lstm_lm.h"
#include "util/result.h"

namespace pstrain::worker {

struct LocalTrainOptions {
  /// Model of the zoo (models::MakeModel), or a TorchScript file's path
  /// (ps::ReadModuleFile). Default: "net".
  std::string model = "net";
  /// A TorchScript model's loss (models::ParseLoss); the zoo's use nll.
  /// Default: "cross_entropy".
  std::string loss = "cross_entropy";
  /// Data set by name (data::OpenSource). Default: "fashion-mnist".
  std::string dataset = "fashion-mnist";
  /// Its directory; "" = Debian's place for the data set.
  std::string data_dir;
  /// imagefolder: side of the crop, pixels. Default: 224.
  int64_t image_size = 224;
  /// Threads reading batches ahead (data::BatchLoader). Default: 2.
  int data_threads = 2;
  /// Optimizer steps to run; epochs follow one another as needed.
  /// REQUIRES: >= 1. Default: 200.
  int64_t steps = 200;
  /// Samples per step. REQUIRES: >= 1 and <= the training set's size.
  /// Default: 32.
  int64_t batch_size = 32;
  /// torch::optim::SGD's learning rate and momentum. Defaults: 0.03, 0.9.
  double lr = 0.03;
  double momentum = 0.9;
  /// The job's --lr_schedule (ps::ResolveLrSchedule, over `steps`): step t
  /// uses the lr a sync server uses for version t. Default: "auto".
  std::string lr_schedule = "auto";
  /// The optimizer by name (ps::MakeOptimizer, libtorch's defaults
  /// otherwise): "sgd" (lr, momentum), "adam", ... Default: "sgd".
  std::string optimizer = "sgd";
  /// > 0: the gradient is clipped to this L2 norm before each step
  /// (torch::nn::utils::clip_grad_norm_). Default: 0.
  double clip_grad_norm = 0;
  /// dataset "text" (model lstm_lm): the words the vocabulary keeps, the
  /// BPTT window, and the model's sizes (its vocabulary is the corpus's).
  /// batch_size is then the number of streams (columns). Defaults: 10000,
  /// 35, LstmLmOptions's.
  int64_t vocab_size = 10000;
  int64_t bptt = 35;
  models::LstmLmOptions lm;
  /// Seeds the initial model, the shuffle (data::ShardSampler) and dropout.
  uint64_t seed = 1;
  /// libtorch intra-op threads for the run (at::set_num_threads; the
  /// previous count is restored afterwards). 0: leave libtorch's count.
  /// Default: 0.
  int threads = 0;
  /// Where the model trains: "cpu", "cuda" or "cuda:i" (ParseDevice;
  /// dataset "text": cpu only). Default: "cpu".
  std::string device = "cpu";
  /// With target_accuracy > 0: evaluate every eval_interval steps (their
  /// time not counted) and stop at the first evaluation that reaches it.
  /// Defaults: 0 (never), 100.
  double target_accuracy = 0;
  int64_t eval_interval = 100;
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

/// Loads the data set, builds the model from `seed`, runs `steps` steps of
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
