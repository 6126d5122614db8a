#include "ps/job_data.h"

#include <torch/torch.h>

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
  if (shape.channels == want.channels && shape.height == want.image_size &&
      shape.width == want.image_size && shape.num_classes == want.num_classes) {
    return Status::Ok();
  }
  return InvalidArgument(
      "--data_dir " + (data_dir.empty() ? std::string("(default)") : data_dir) +
      ": the training set of " + spec.dataset + " has " +
      ShapeText(shape.channels, shape.height, shape.num_classes) +
      " classes; rank 0's test set " +
      ShapeText(want.channels, want.image_size, want.num_classes));
}

Result<std::shared_ptr<models::Model>> MakeJobModel(const JobSpec& spec) {
  return models::MakeModel(spec.model, InputShapeOf(spec));
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
