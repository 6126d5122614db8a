// pstrain eval: scores a saved model on the test set.

#include <torch/torch.h>

#include "apps/pstrain/command.h"
#include "apps/pstrain/flags.h"
#include "data/dataset.h"
#include "models/evaluate.h"
#include "models/model_zoo.h"
#include "ps/checkpoint.h"

namespace pstrain::apps {

namespace {

struct EvalFlags {
  std::string checkpoint = "pstrain-model.pt";
  std::string model;    // "" = from the checkpoint's JSON file
  std::string dataset;  // likewise
  LocalFlags local;
};

Status Evaluate(EvalFlags& f, report::EventLog& log) {
  PS_ASSIGN_OR_RETURN(ps::NamedTensors tensors, ps::LoadCheckpointTensors(f.checkpoint));
  auto meta = ps::LoadCheckpointMeta(f.checkpoint);
  if (meta.ok()) {
    if (f.model.empty()) f.model = meta->value("model", "");
    if (f.dataset.empty()) f.dataset = meta->value("dataset", "");
  }
  if (f.model.empty()) {
    return InvalidArgument("--model is required: " + meta.status().message());
  }
  if (f.dataset.empty()) f.dataset = "fashion-mnist";
  PS_ASSIGN_OR_RETURN(std::shared_ptr<models::Model> model, models::MakeModel(f.model));
  ps::NamedTensors params;
  for (const auto& item : model->named_parameters()) {
    params.emplace_back(item.key(), item.value());
  }
  PS_RETURN_IF_ERROR(ps::LoadIntoParameters(tensors, params, f.checkpoint));
  PS_ASSIGN_OR_RETURN(data::Dataset test,
                      data::LoadDataset(f.dataset, f.local.data_dir, data::Split::kTest));
  auto r = models::Evaluate(*model, test.images, test.labels);
  log.Emit("eval", {{"checkpoint", f.checkpoint},
                    {"test_accuracy", r.accuracy},
                    {"test_loss", r.loss},
                    {"samples", r.samples}});
  return Status::Ok();
}

int RunEval(EvalFlags& f) {
  auto log = MakeEventLog(f.local, 0, "");
  SetThreads(f.local.threads);
  Status s = Evaluate(f, *log);
  if (s.code() == StatusCode::kCorruption) s = InvalidArgument(s.message());
  return s.ok() ? 0 : Fail(*log, s);
}

}  // namespace

RunFn SetupEval(CLI::App* sub) {
  auto f = std::make_shared<EvalFlags>();
  sub->add_option("--checkpoint", f->checkpoint, "Saved model (state_dict)")
      ->capture_default_str();
  sub->add_option("--model", f->model, "Model name; default: from the checkpoint's .json");
  sub->add_option("--dataset", f->dataset, "Data set; default: from the checkpoint's .json");
  AddLocalFlags(sub, &f->local);
  return [f] { return RunEval(*f); };
}

}  // namespace pstrain::apps
