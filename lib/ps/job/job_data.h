#pragma once
// The job's data set and model, as every rank builds them from the job
// spec: rank 0 reads its test set's shape into the spec (channels, size,
// classes), every other rank builds the model from the spec, and each
// worker checks that its training set has that shape. Free functions.

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "data/source.h"
#include "data/text_corpus.h"
#include "models/evaluator.h"
#include "models/model.h"
#include "models/model_zoo.h"
#include "ps/job/job_spec.h"
#include "report/event_log.h"
#include "util/result.h"

namespace pstrain::ps {

/// What data::OpenSource reads for `spec` from `data_dir` ("" for the
/// data set's default).
data::SourceOptions SourceOptionsOf(const JobSpec& spec,
                                    const std::string& data_dir);

/// Opens `split` of the job's data set. Bad data (a missing or malformed
/// folder or file) is bad input: kInvalidArgument, one line naming the path.
/// A corrupt image met while reading is logged once to `log` ("skipping
/// corrupt image PATH: reason"); nullptr: to stderr.
Result<std::unique_ptr<data::Source>> OpenJobSource(
    const JobSpec& spec, const std::string& data_dir, data::Split split,
    report::EventLog* log = nullptr);

/// Stores `shape` (rank 0's test set) in spec's input_channels, input_size
/// and num_classes.
void SetInputShape(const data::SourceShape& shape, JobSpec* spec);

/// The model's input as the spec says; {1, 28, 10} (Fashion-MNIST) where
/// the spec has none yet (0s).
models::InputShape InputShapeOf(const JobSpec& spec);

/// kInvalidArgument unless `shape` (a worker's training set) is what the
/// spec says: "--data_dir D: the training set has 3x32x32 images in 10
/// classes; rank 0's test set 1x28x28 in 10". For --dataset tensors the
/// classes are not compared (a split may lack the largest label).
Status CheckInputShape(const JobSpec& spec, const std::string& data_dir,
                       const data::SourceShape& shape);

/// Whether the job trains a language model on a text corpus (--dataset
/// text).
bool IsTextJob(const JobSpec& spec);

/// The job's text corpus (data::LoadTextCorpus, spec.vocab_size words),
/// read from `data_dir` ("": the fortunes). Bad data is bad input:
/// kInvalidArgument or kNotFound, one line naming the file.
Result<std::shared_ptr<const data::TextCorpus>> OpenJobCorpus(
    const JobSpec& spec, const std::string& data_dir);

/// lstm_lm's options as the spec says; the vocabulary is spec.num_classes
/// (rank 0's corpus), or vocab_size + 1 where the spec has none yet.
models::LstmLmOptions LmOptionsOf(const JobSpec& spec);

/// Streams an evaluation of a language model uses: pytorch/examples'
/// word_language_model evaluates with batch 10.
inline constexpr int64_t kLmEvalBatch = 10;

/// An Evaluator of the language model `model` over `tokens` (int64 [n], a
/// split's ids), as word_language_model's evaluate(): kLmEvalBatch
/// streams, windows of `bptt`, the state carried from window to window.
/// Its EvalResult: loss the mean NLL per target token, perplexity
/// exp(loss), accuracy the fraction of next tokens predicted (argmax),
/// samples the target tokens. REQUIRES: model is a LanguageModel.
std::shared_ptr<models::Evaluator> MakeLmEvaluator(
    std::shared_ptr<models::Model> model, torch::Tensor tokens, int64_t bptt);

/// Whether the job stops at a target (--target_accuracy or
/// --target_perplexity).
bool HasTarget(const JobSpec& spec);
/// Whether `r` reaches the job's target: accuracy at or above
/// --target_accuracy, or perplexity (> 0) at or below --target_perplexity.
bool ReachesTarget(const JobSpec& spec, const models::EvalResult& r);
/// The eval event's scores: test_accuracy and test_loss, and a language
/// model's test_perplexity.
nlohmann::json EvalScores(const models::EvalResult& r);

/// The job's model: models::MakeModel(spec.model, InputShapeOf(spec),
/// LmOptionsOf(spec)), or the TorchScript module in spec.module
/// (models::ScriptModel::Load; kInvalidArgument when spec.module is null).
Result<std::shared_ptr<models::Model>> MakeJobModel(const JobSpec& spec);

/// An Evaluator over all of `source` (which must outlive it), read batch by
/// batch.
std::shared_ptr<models::Evaluator> MakeEvaluator(
    std::shared_ptr<models::Model> model,
    std::shared_ptr<const data::Source> source,
    models::EvaluatorOptions options = {});

}  // namespace pstrain::ps
