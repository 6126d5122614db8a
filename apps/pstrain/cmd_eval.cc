// pstrain eval: scores a saved model on the test set.

#include <chrono>

#include <torch/torch.h>

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "data/source.h"
#include "models/evaluator.h"
#include "models/model_zoo.h"
#include "ps/job/job_data.h"
#include "ps/job/job_module.h"
#include "ps/store/checkpoint.h"

namespace pstrain::apps {

namespace {

struct EvalFlags {
  std::string checkpoint = "pstrain-model.pt";
  std::string model;       // "" = from the checkpoint's JSON file
  std::string dataset;     // likewise
  int64_t image_size = 0;  // likewise; 0 and none there: 224
  int64_t batch_size = 0;  // 0: the evaluator picks (models/evaluator.h)
  LocalFlags local;
};

// A language model: its job (the checkpoint's .json) says the vocabulary,
// the model's sizes and the BPTT window; the corpus is read again.
// Scores the checkpoint's `tensors` with `evaluator`: *r, and in *seconds
// the time the scoring took (the load is not timed). A tensor the model
// lacks or shapes that differ are bad input naming the checkpoint.
Status LoadAndScore(models::Evaluator& evaluator,
                    const ps::NamedTensors& tensors,
                    const std::string& checkpoint, models::EvalResult* r,
                    double* seconds) {
  Status loaded = evaluator.Load(tensors);
  if (!loaded.ok())
    return InvalidArgument(checkpoint + ": " + loaded.message());
  const auto start = std::chrono::steady_clock::now();
  *r = evaluator.Score();
  *seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Status::Ok();
}

Status EvaluateText(const EvalFlags& f, const ps::NamedTensors& tensors,
                    const Result<nlohmann::json>& meta, report::EventLog& log) {
  if (!meta.ok() || !meta->contains("job"))
    return InvalidArgument("--dataset text needs the checkpoint's .json: " +
                           meta.status().message());
  PS_ASSIGN_OR_RETURN(ps::JobSpec spec, ps::JobSpecFromJson((*meta)["job"]));
  spec.model = f.model;
  PS_ASSIGN_OR_RETURN(auto corpus, ps::OpenJobCorpus(spec, f.local.data_dir));
  spec.num_classes = corpus->vocab.size();
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model,
                      ps::MakeJobModel(spec));
  auto evaluator = ps::MakeLmEvaluator(model, corpus->test, spec.bptt);
  models::EvalResult r;
  double seconds = 0;
  PS_RETURN_IF_ERROR(
      LoadAndScore(*evaluator, tensors, f.checkpoint, &r, &seconds));
  nlohmann::json event = {{"checkpoint", f.checkpoint},
                          {"samples", r.samples},
                          {"batch_size", ps::kLmEvalBatch},
                          {"seconds", seconds}};
  event.update(ps::EvalScores(r));
  log.Emit("eval", event);
  return Status::Ok();
}

// The model to score: a built-in one for `shape`, or the TorchScript file
// --model names (the checkpoint's, by default), which must be the one the
// checkpoint's job trained (its SHA-256); *loss is how the job scored it.
Result<std::shared_ptr<models::Model>> LoadModel(
    const EvalFlags& f, const Result<nlohmann::json>& meta,
    const data::SourceShape& shape, models::Loss* loss) {
  if (models::IsZooModel(f.model)) {
    return models::MakeModel(f.model,
                             {shape.channels, shape.height, shape.num_classes});
  }
  nlohmann::json job = nlohmann::json::object();
  if (meta.ok() && meta->contains("job") && (*meta)["job"].is_object())
    job = (*meta)["job"];
  ps::JobSpec spec;
  spec.model = f.model;
  spec.loss = job.value("loss", spec.loss);
  PS_ASSIGN_OR_RETURN(*loss, models::ParseLoss(spec.loss));
  PS_RETURN_IF_ERROR(ps::ReadModuleFile(&spec));
  const std::string trained = job.value("model_sha256", "");
  if (!trained.empty() && trained != spec.model_sha256) {
    return InvalidArgument("--model " + f.model + " has SHA-256 " +
                           spec.model_sha256 + "; " + f.checkpoint +
                           " was trained with " + trained);
  }
  return ps::MakeJobModel(spec);
}

Status Evaluate(EvalFlags& f, report::EventLog& log) {
  PS_ASSIGN_OR_RETURN(ps::NamedTensors tensors,
                      ps::LoadCheckpointTensors(f.checkpoint));
  auto meta = ps::LoadCheckpointMeta(f.checkpoint);
  if (meta.ok()) {
    if (f.model.empty())
      f.model = meta->value("model", "");
    if (f.dataset.empty())
      f.dataset = meta->value("dataset", "");
    if (f.image_size == 0 && meta->contains("job") &&
        (*meta)["job"].is_object())
      f.image_size = (*meta)["job"].value("image_size", int64_t{0});
  }
  if (f.model.empty()) {
    return InvalidArgument("--model is required: " + meta.status().message());
  }
  if (f.dataset.empty())
    f.dataset = "fashion-mnist";
  if (f.dataset == "text")
    return EvaluateText(f, tensors, meta, log);
  data::SourceOptions source;
  source.dataset = f.dataset;
  source.data_dir = f.local.data_dir;
  if (f.image_size > 0)
    source.image_size = f.image_size;
  PS_ASSIGN_OR_RETURN(std::shared_ptr<const data::Source> test,
                      data::OpenSource(source, data::Split::kTest));
  models::EvaluatorOptions options;
  options.batch_size = f.batch_size;
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model,
                      LoadModel(f, meta, test->shape(), &options.loss));
  auto evaluator = ps::MakeEvaluator(model, test, options);
  models::EvalResult r;
  double seconds = 0;
  PS_RETURN_IF_ERROR(
      LoadAndScore(*evaluator, tensors, f.checkpoint, &r, &seconds));
  log.Emit("eval", {{"checkpoint", f.checkpoint},
                    {"test_accuracy", r.accuracy},
                    {"test_loss", r.loss},
                    {"samples", r.samples},
                    {"batch_size", evaluator->batch_size()},
                    {"seconds", seconds}});
  return Status::Ok();
}

int RunEval(EvalFlags& f) {
  auto log = MakeEventLog(f.local, 0, "");
  Status s = CheckFlagNeeds(f.local.needs);
  if (!s.ok())
    return Fail(*log, s);
  SetThreads(f.local.threads);
  s = CorruptionAsInvalidArgument(Evaluate(f, *log));
  return s.ok() ? 0 : Fail(*log, s);
}

}  // namespace

RunFn SetupEval(CLI::App* sub) {
  auto f = std::make_shared<EvalFlags>();
  sub->add_option("--checkpoint", f->checkpoint, "Saved model (state_dict)")
      ->capture_default_str();
  sub->add_option("--model", f->model,
                  "Model name, or the TorchScript file the checkpoint's job "
                  "trained; default: from the checkpoint's .json");
  sub->add_option("--dataset", f->dataset,
                  "Data set; default: from the checkpoint's .json");
  sub->add_option("--image_size", f->image_size,
                  "imagefolder: side of the center crop, pixels; default: "
                  "from the checkpoint's .json, else 224")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--batch_size", f->batch_size,
                  "Test samples per forward; 0: as many as hold 64 28x28 "
                  "images, the fastest measured (pstrain bench eval)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddLocalFlags(sub, &f->local);
  sub->remove_option(sub->get_option("--timeline"));  // eval has no steps
  return [f] { return RunEval(*f); };
}

}  // namespace pstrain::apps
