#include "ps/job/job_data.h"

#include <cmath>

#include <torch/torch.h>

#include "data/bptt_batches.h"
#include "models/language_model.h"
#include "models/script_model.h"
#include "ps/job/job_module.h"

namespace pstrain::ps {
namespace {

std::string ShapeText(int64_t c, int64_t side, int64_t classes) {
  return std::to_string(c) + "x" + std::to_string(side) + "x" +
         std::to_string(side) + " in " + std::to_string(classes);
}

}  // namespace

data::SourceOptions SourceOptionsOf(const JobSpec& spec,
                                    const std::string& data_dir) {
  data::SourceOptions o;
  o.dataset = spec.dataset;
  o.data_dir = data_dir;
  o.image_size = spec.image_size;
  o.seed = spec.seed;
  return o;
}

Result<std::unique_ptr<data::Source>> OpenJobSource(const JobSpec& spec,
                                                    const std::string& data_dir,
                                                    data::Split split,
                                                    report::EventLog* log) {
  data::SourceOptions options = SourceOptionsOf(spec, data_dir);
  if (log != nullptr) {
    options.on_corrupt = [log](const Status& s) {
      log->Info("skipping corrupt image " + s.message());
    };
  }
  return CorruptionAsInvalidArgument(data::OpenSource(options, split));
}

void SetInputShape(const data::SourceShape& shape, JobSpec* spec) {
  spec->input_channels = shape.channels;
  spec->input_size = shape.height;
  spec->num_classes = shape.num_classes;
}

models::InputShape InputShapeOf(const JobSpec& spec) {
  models::InputShape input;
  if (spec.input_channels > 0)
    input.channels = spec.input_channels;
  if (spec.input_size > 0)
    input.image_size = spec.input_size;
  if (spec.num_classes > 0)
    input.num_classes = spec.num_classes;
  return input;
}

Status CheckInputShape(const JobSpec& spec, const std::string& data_dir,
                       const data::SourceShape& shape) {
  const models::InputShape want = InputShapeOf(spec);
  // Tensor files count classes by their largest label, which one split may
  // lack: a module's output is checked against the labels instead
  // (ps::CheckModelOnData).
  const bool classes = spec.dataset != "tensors";
  if (shape.channels == want.channels && shape.height == want.image_size &&
      shape.width == want.image_size &&
      (!classes || shape.num_classes == want.num_classes)) {
    return Status::Ok();
  }
  return InvalidArgument(
      "--data_dir " + (data_dir.empty() ? std::string("(default)") : data_dir) +
      ": the training set of " + spec.dataset + " has " +
      ShapeText(shape.channels, shape.height, shape.num_classes) +
      " classes; rank 0's test set " +
      ShapeText(want.channels, want.image_size, want.num_classes));
}

bool HasTarget(const JobSpec& spec) {
  return spec.target_accuracy > 0 || spec.target_perplexity > 0;
}

bool ReachesTarget(const JobSpec& spec, const models::EvalResult& r) {
  return (spec.target_accuracy > 0 && r.accuracy >= spec.target_accuracy) ||
         (spec.target_perplexity > 0 && r.perplexity > 0 &&
          r.perplexity <= spec.target_perplexity);
}

nlohmann::json EvalScores(const models::EvalResult& r) {
  nlohmann::json j = {{"test_accuracy", r.accuracy}, {"test_loss", r.loss}};
  if (r.perplexity > 0)
    j["test_perplexity"] = r.perplexity;
  return j;
}

bool IsTextJob(const JobSpec& spec) {
  return spec.dataset == "text";
}

Result<std::shared_ptr<const data::TextCorpus>> OpenJobCorpus(
    const JobSpec& spec, const std::string& data_dir) {
  data::TextCorpusOptions o;
  o.data_dir = data_dir;
  o.vocab_size = spec.vocab_size;
  PS_ASSIGN_OR_RETURN(data::TextCorpus corpus, data::LoadTextCorpus(o));
  return std::make_shared<const data::TextCorpus>(std::move(corpus));
}

models::LstmLmOptions LmOptionsOf(const JobSpec& spec) {
  models::LstmLmOptions o;
  o.vocab_size = spec.num_classes > 0 ? spec.num_classes : spec.vocab_size + 1;
  o.embed_dim = spec.embed_dim;
  o.hidden_dim = spec.hidden_dim;
  o.num_layers = spec.num_layers;
  o.dropout = spec.dropout;
  o.tie_weights = spec.tie_weights;
  return o;
}

std::shared_ptr<models::Evaluator> MakeLmEvaluator(
    std::shared_ptr<models::Model> model, torch::Tensor tokens, int64_t bptt) {
  auto batched = data::Batchify(tokens, kLmEvalBatch);
  auto score = [batched, bptt](models::Model& m) {
    auto& lm = dynamic_cast<models::LanguageModel&>(m);
    data::BpttBatches windows(batched, 0, kLmEvalBatch, bptt);
    models::LmState state = lm.InitState(kLmEvalBatch);
    double nll = 0;
    int64_t correct = 0;
    for (int64_t i = 0; i < windows.size(); ++i) {
      const data::BpttWindow w = windows.Get(i);
      auto [out, next] = lm.Forward(w.input, state);
      state = next;
      nll +=
          torch::nll_loss(out, w.target, {}, at::Reduction::Sum).item<double>();
      correct += out.argmax(1).eq(w.target).sum().item<int64_t>();
    }
    models::EvalResult r;
    r.samples = windows.tokens();
    r.loss = r.samples > 0 ? nll / r.samples : 0.0;
    r.accuracy = r.samples > 0 ? static_cast<double>(correct) / r.samples : 0;
    r.perplexity = std::exp(r.loss);
    return r;
  };
  return std::make_shared<models::Evaluator>(std::move(model),
                                             std::move(score));
}

Result<std::shared_ptr<models::Model>> MakeJobModel(const JobSpec& spec) {
  if (!IsScriptJob(spec))
    return models::MakeModel(spec.model, InputShapeOf(spec), LmOptionsOf(spec));
  if (!spec.module) {
    return InvalidArgument("--model " + spec.model +
                           ": the module's bytes are not loaded");
  }
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::ScriptModel> model,
                      models::ScriptModel::Load(*spec.module, spec.model));
  return std::shared_ptr<models::Model>(std::move(model));
}

std::shared_ptr<models::Evaluator> MakeEvaluator(
    std::shared_ptr<models::Model> model,
    std::shared_ptr<const data::Source> source,
    models::EvaluatorOptions options) {
  const data::SourceShape s = source->shape();
  const int64_t n = source->size();
  auto read = [source](int64_t begin, int64_t end) {
    data::Batch b = source->Get(torch::arange(begin, end, torch::kInt64), 0);
    return std::make_pair(b.images, b.labels);
  };
  return std::make_shared<models::Evaluator>(std::move(model), n,
                                             s.channels * s.height * s.width,
                                             std::move(read), options);
}

}  // namespace pstrain::ps
