#include "ps/job/job_module.h"

#include <fstream>
#include <iterator>
#include <memory>

#include <torch/torch.h>

#include "models/model_zoo.h"
#include "util/check.h"
#include "util/sha256.h"

namespace pstrain::ps {
namespace {

// ErrorLine's, of the error's text.
std::string LineOf(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  if (first.find("failed in the TorchScript interpreter") == std::string::npos)
    return first;
  const size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos)
    return first;
  const size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

// The bytes of `path`, or why not (the flag named `flag`).
Result<std::shared_ptr<const std::string>> ReadBytes(const std::string& flag,
                                                     const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string names;
    for (const std::string& name : models::ModelNames())
      names += (names.empty() ? "" : ", ") + name;
    return InvalidArgument(flag + " '" + path +
                           "': neither a built-in model (" + names +
                           ") nor a file");
  }
  auto bytes = std::make_shared<std::string>(std::istreambuf_iterator<char>(in),
                                             std::istreambuf_iterator<char>());
  if (in.bad())
    return IOError(flag + " '" + path + "': cannot be read");
  return std::shared_ptr<const std::string>(std::move(bytes));
}

}  // namespace

std::string ErrorLine(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  return LineOf(c10 ? c10->what_without_backtrace() : e.what());
}

bool IsScriptJob(const JobSpec& spec) {
  return !models::IsZooModel(spec.model);
}

models::Loss LossOf(const JobSpec& spec) {
  if (!IsScriptJob(spec))
    return models::Loss::kNll;
  auto loss = models::ParseLoss(spec.loss);
  PS_CHECK(loss.ok()) << loss.status().message();  // ValidateJobSpec's
  return *loss;
}

Status ReadModuleFile(JobSpec* spec) {
  if (!IsScriptJob(*spec))
    return Status::Ok();
  PS_ASSIGN_OR_RETURN(spec->module, ReadBytes("--model", spec->model));
  spec->model_sha256 = Sha256Hex(*spec->module);
  return Status::Ok();
}

Status UseOwnModuleFile(const std::string& path, JobSpec* spec) {
  if (models::IsZooModel(path)) {
    if (path == spec->model)
      return Status::Ok();
    return Incompatible("--model " + path + ": rank 0's job trains " +
                        (IsScriptJob(*spec)
                             ? "the module " + spec->model + " (SHA-256 " +
                                   spec->model_sha256 + ")"
                             : spec->model));
  }
  PS_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> bytes,
                      ReadBytes("--model", path));
  const std::string own = Sha256Hex(*bytes);
  if (!IsScriptJob(*spec)) {
    return Incompatible("--model " + path + " (SHA-256 " + own +
                        "): rank 0's job trains the built-in model " +
                        spec->model);
  }
  if (own != spec->model_sha256) {
    return Incompatible("--model " + path + " has SHA-256 " + own +
                        ", rank 0's module " + spec->model + " has " +
                        spec->model_sha256 +
                        ": a different file (leave --model out to take "
                        "rank 0's)");
  }
  spec->module = std::move(bytes);
  return Status::Ok();
}

Status CheckModelOnData(const JobSpec& spec, models::Model& model,
                        const data::Source& source, const std::string& data) {
  if (!IsScriptJob(spec) || source.size() == 0)
    return Status::Ok();
  const int64_t n = std::min<int64_t>(2, source.size());
  const data::Batch batch = source.Get(torch::arange(n, torch::kInt64), 0);
  torch::Tensor out;
  {
    torch::NoGradGuard no_grad;
    model.eval();
    try {
      out = model.forward(batch.images);
    } catch (const std::exception& e) {
      model.train();
      return InvalidArgument("--model " + spec.model + ": forward on " + data +
                             "'s x " + models::ShapeText(batch.images) +
                             " failed: " + ErrorLine(e));
    }
    model.train();
  }
  Status fits = models::CheckTarget(LossOf(spec), out, batch.labels);
  return fits.ok() ? fits : InvalidArgument(data + ": " + fits.message());
}

std::string DataName(const JobSpec& spec, const std::string& data_dir,
                     data::Split split) {
  const bool train = split == data::Split::kTrain;
  if (spec.dataset == "tensors") {
    std::string dir = data_dir.empty() ? "." : data_dir;
    if (dir.back() != '/')
      dir += '/';
    return dir + (train ? "train.pt" : "test.pt");
  }
  return std::string(train ? "the training set" : "the test set") + " of " +
         spec.dataset;
}

}  // namespace pstrain::ps
