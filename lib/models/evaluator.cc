#include "models/evaluator.h"

#include <unordered_map>

#include <torch/torch.h>

#include "models/model_state.h"
#include "util/check.h"

namespace pstrain::models {

namespace {

std::string ShapeOf(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i)
    s += (i ? "," : "") + std::to_string(t.size(i));
  return s + "]";
}

}  // namespace

Evaluator::Evaluator(std::shared_ptr<Model> model, torch::Tensor images,
                     torch::Tensor labels, EvaluatorOptions options)
    : model_(std::move(model)),
      num_samples_(labels.size(0)),
      options_(options) {
  PS_CHECK(images.size(0) == labels.size(0)) << "images and labels differ";
  PS_CHECK(options_.batch_size >= 0) << "batch_size " << options_.batch_size;
  if (options_.batch_size == 0)
    options_.batch_size = AutoBatchSize(images);
  // oneDNN's convolutions on channels-last (NHWC) tensors skip the reorders
  // to and from its own layout: 25% faster for Net on one core.
  if (images.dim() == 4)
    images = images.contiguous(at::MemoryFormat::ChannelsLast);
  read_ = [images, labels](int64_t begin, int64_t end) {
    return std::make_pair(images.slice(0, begin, end),
                          labels.slice(0, begin, end));
  };
  ChannelsLastModel();
}

Evaluator::Evaluator(std::shared_ptr<Model> model, int64_t num_samples,
                     int64_t sample_elements, SampleReader read,
                     EvaluatorOptions options)
    : model_(std::move(model)),
      num_samples_(num_samples),
      read_(std::move(read)),
      options_(options) {
  PS_CHECK(num_samples_ >= 0) << "num_samples " << num_samples_;
  PS_CHECK(options_.batch_size >= 0) << "batch_size " << options_.batch_size;
  if (options_.batch_size == 0) {
    options_.batch_size = std::max<int64_t>(
        1, kEvalBatchElements / std::max<int64_t>(1, sample_elements));
  }
  ChannelsLastModel();
}

Evaluator::Evaluator(std::shared_ptr<Model> model,
                     std::function<EvalResult(Model&)> score)
    : model_(std::move(model)), score_(std::move(score)) {
  options_.batch_size = 1;
}

// Score(state) copies into these tensors and keeps their layout.
void Evaluator::ChannelsLastModel() {
  torch::NoGradGuard no_grad;
  for (auto& p : model_->parameters()) {
    if (p.dim() == 4)
      p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (auto& b : model_->buffers()) {
    if (b.dim() == 4)
      b.set_data(b.contiguous(at::MemoryFormat::ChannelsLast));
  }
}

int64_t AutoBatchSize(const torch::Tensor& images) {
  const int64_t per_sample = images.dim() > 0 && images.size(0) > 0
                                 ? images.numel() / images.size(0)
                                 : 1;
  return std::max<int64_t>(
      1, kEvalBatchElements / std::max<int64_t>(1, per_sample));
}

Result<EvalResult> Evaluator::Score(const NamedTensors& state) {
  PS_RETURN_IF_ERROR(Load(state));
  return Score();
}

Status Evaluator::Load(const NamedTensors& state) {
  std::unordered_map<std::string, const torch::Tensor*> by_name;
  for (const auto& [name, tensor] : state)
    by_name.emplace(name, &tensor);
  torch::NoGradGuard no_grad;
  auto copy_in = [&](const std::string& name, torch::Tensor& dst) -> Status {
    auto it = by_name.find(name);
    if (it == by_name.end())
      return InvalidArgument("the state has no '" + name + "'");
    const torch::Tensor& src = *it->second;
    if (!src.sizes().equals(dst.sizes())) {
      return InvalidArgument("'" + name + "' is " + ShapeOf(src) +
                             ", the model's " + ShapeOf(dst));
    }
    dst.copy_(src);
    return Status::Ok();
  };
  // ModelState: a tied weight is read once, under its key's name.
  for (auto& item : ModelState(*model_)) {
    PS_RETURN_IF_ERROR(copy_in(item.name, item.value));
  }
  return Status::Ok();
}

// Inference mode skips autograd's bookkeeping (version counters, views);
// each batch is a view of the set, and its activations are freed before the
// next batch, so nothing grows with the number of batches.
EvalResult Evaluator::Score() {
  c10::InferenceMode inference;
  model_->eval();
  if (score_)
    return score_(*model_);

  const int64_t b = options_.batch_size;
  // A model on a GPU (--num_gpus) takes its input there.
  const auto params = model_->parameters();
  const torch::Device device =
      params.empty() ? torch::Device(torch::kCPU) : params.front().device();
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t n = 0, elements = 0;
  for (int64_t begin = 0; begin < num_samples_; begin += b) {
    auto [x, y] = read_(begin, std::min(num_samples_, begin + b));
    if (y.size(0) == 0)
      continue;
    if (x.dim() == 4)
      x = x.contiguous(at::MemoryFormat::ChannelsLast);
    const auto out = model_->forward(x.to(device));
    y = y.to(out.device());
    const Loss loss = options_.loss;
    loss_sum += ComputeLoss(loss, out, y, at::Reduction::Sum).item<double>();
    if (IsClassification(loss))
      correct += out.argmax(1).eq(y).sum().item<int64_t>();
    n += y.size(0);
    elements += y.numel();
  }
  EvalResult r;
  r.samples = n;
  r.accuracy = n ? static_cast<double>(correct) / n : 0.0;
  r.loss = elements ? loss_sum / elements : 0.0;  // mse: per element
  return r;
}

}  // namespace pstrain::models
