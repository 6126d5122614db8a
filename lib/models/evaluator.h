#pragma once
// Evaluator: the one way pstrain scores a model on a labelled set (serve's
// periodic and final evaluations, eval, bench, the single-process trainer).
// It scores in inference mode (dropout off, no autograd) in batches of
// EvaluatorOptions::batch_size, which `pstrain bench eval` measures: the
// convolutions of Debian's libtorch unfold their input (im2col), so a batch
// of 1000 Net inputs makes each convolution write hundreds of MB, while a
// batch of a few dozen keeps it in cache.
// Not thread-safe: one thread scores at a time. Threads of libtorch and BLAS
// are the calling thread's (the caller sets them).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "models/loss.h"
#include "models/model.h"
#include "util/result.h"

namespace pstrain::models {

/// Tensors by name: a state_dict's parameters and buffers.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct EvalResult {
  /// Fraction of correct argmax predictions, 0..1; 0 for a regression
  /// (Loss::kMse).
  double accuracy = 0;
  /// The mean loss per sample (EvaluatorOptions::loss; kMse: per element).
  double loss = 0;
  int64_t samples = 0;  // a language model: target tokens
  /// A language model: exp(loss), the perplexity; 0 for a classifier.
  double perplexity = 0;
};

/// Input elements per forward when scoring: 64 images of 28x28. Measured
/// with `pstrain bench eval` (Net, Fashion-MNIST's test set, 2 cores with a
/// 2 MiB L2 each): 64 was the fastest batch at 2 threads and within 5% of
/// the fastest at 1; at 96 and more the activations leave the cache and a
/// pass takes 1.2-1.7 times as long, at 1000 twice.
inline constexpr int64_t kEvalBatchElements = 64 * 28 * 28;

/// The batch an Evaluator picks for `images` (float32 [N,...]): as many
/// samples as hold kEvalBatchElements input elements, at least 1.
int64_t AutoBatchSize(const torch::Tensor& images);

struct EvaluatorOptions {
  /// Samples per forward; 0 (default): AutoBatchSize(images).
  /// REQUIRES: >= 0.
  int64_t batch_size = 0;
  /// How outputs are scored. Default: kNll, the built-in models'.
  Loss loss = Loss::kNll;
};

/// Reads samples [begin, end) of a labelled set: images float32 [b, ...]
/// and labels int64 [b], CPU, where b <= end - begin (samples that cannot
/// be read are left out). Called with consecutive ranges from one thread.
using SampleReader = std::function<std::pair<torch::Tensor, torch::Tensor>(
    int64_t begin, int64_t end)>;

class Evaluator {
 public:
  /// `model`: the network to score, on the CPU; Score(state) overwrites its
  /// parameters and buffers. images: float32 [N,...] of the model's input
  /// shape; labels: int64 [N]; both CPU. The Evaluator shares all three and
  /// turns the model's 4-d parameters and buffers channels-last (the values
  /// stay, only their layout changes).
  /// REQUIRES: images.size(0) == labels.size(0).
  Evaluator(std::shared_ptr<Model> model, torch::Tensor images,
            torch::Tensor labels, EvaluatorOptions options = {});
  /// A set read batch by batch (one not held in memory: an image folder).
  /// `num_samples`: the set's size; `sample_elements`: input elements of
  /// one sample (C*H*W), for the automatic batch size. Score() reports the
  /// samples actually read. REQUIRES: num_samples >= 0.
  Evaluator(std::shared_ptr<Model> model, int64_t num_samples,
            int64_t sample_elements, SampleReader read,
            EvaluatorOptions options = {});
  /// A model scored by `score` (a language model over its test stream,
  /// ps/job/job_data.h), which runs in inference mode with the model in eval().
  Evaluator(std::shared_ptr<Model> model,
            std::function<EvalResult(Model&)> score);
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// Copies `state` into the model by name (every parameter and buffer of
  /// the model must be there, of its shape; extra names are ignored), then
  /// scores it. kInvalidArgument naming the first missing or misshapen
  /// tensor.
  Result<EvalResult> Score(const NamedTensors& state);

  /// The copying half of Score(state): errors as there.
  [[nodiscard]] Status Load(const NamedTensors& state);

  /// Scores the model as it is. Leaves it in eval() mode.
  EvalResult Score();

  int64_t batch_size() const { return options_.batch_size; }
  int64_t samples() const { return num_samples_; }

 private:
  void ChannelsLastModel();

  std::shared_ptr<Model> model_;
  int64_t num_samples_ = 0;
  SampleReader read_;
  std::function<EvalResult(Model&)> score_;
  EvaluatorOptions options_;
};

}  // namespace pstrain::models
