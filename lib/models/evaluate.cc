#include "models/evaluate.h"

#include <torch/torch.h>

#include "util/check.h"

namespace pstrain::models {

EvalResult Evaluate(Model& model, const torch::Tensor& images,
                    const torch::Tensor& labels, int64_t batch_size) {
  PS_CHECK(images.size(0) == labels.size(0)) << "images and labels differ";
  PS_CHECK(batch_size >= 1) << "batch_size " << batch_size;
  torch::NoGradGuard no_grad;
  model.eval();
  const auto device = model.parameters().front().device();
  const int64_t n = images.size(0);
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    int64_t end = std::min(n, begin + batch_size);
    auto x = images.slice(0, begin, end).to(device);
    auto y = labels.slice(0, begin, end).to(device);
    auto out = model.forward(x);
    loss_sum += torch::nll_loss(out, y, {}, at::Reduction::Sum).item<double>();
    correct += out.argmax(1).eq(y).sum().item<int64_t>();
  }
  EvalResult r;
  r.samples = n;
  r.accuracy = n ? static_cast<double>(correct) / n : 0.0;
  r.loss = n ? loss_sum / n : 0.0;
  return r;
}

}  // namespace pstrain::models
