#include "models/loss.h"

#include <torch/torch.h>

namespace pstrain::models {

const char* LossName(Loss loss) {
  switch (loss) {
    case Loss::kCrossEntropy:
      return "cross_entropy";
    case Loss::kNll:
      return "nll";
    case Loss::kMse:
      return "mse";
  }
  return "unknown";
}

Result<Loss> ParseLoss(const std::string& name) {
  for (Loss l : {Loss::kCrossEntropy, Loss::kNll, Loss::kMse}) {
    if (name == LossName(l))
      return l;
  }
  return InvalidArgument("--loss '" + name +
                         "': expected cross_entropy, nll or mse");
}

bool IsClassification(Loss loss) {
  return loss != Loss::kMse;
}

torch::Tensor ComputeLoss(Loss loss, const torch::Tensor& output,
                          const torch::Tensor& target,
                          at::Reduction::Reduction reduction) {
  switch (loss) {
    case Loss::kCrossEntropy:
      return torch::nll_loss(torch::log_softmax(output, 1), target, {},
                             reduction);
    case Loss::kNll:
      return torch::nll_loss(output, target, {}, reduction);
    case Loss::kMse:
      return torch::mse_loss(output, target, reduction);
  }
  return {};
}

Status CheckTarget(Loss loss, const torch::Tensor& output,
                   const torch::Tensor& target) {
  const std::string flag = std::string("--loss ") + LossName(loss);
  const std::string got =
      "; y is " + DTypeText(target.scalar_type()) + " " + ShapeText(target);
  if (loss == Loss::kMse) {
    if (!at::isFloatingType(target.scalar_type()) ||
        !target.sizes().equals(output.sizes())) {
      return InvalidArgument(flag +
                             " needs a float target of the output's shape " +
                             ShapeText(output) + got);
    }
    return Status::Ok();
  }
  if (target.scalar_type() != at::kLong || target.dim() != 1) {
    return InvalidArgument(flag +
                           " needs int64 class indices y [B] (a float y is a "
                           "regression target: --loss mse)" +
                           got);
  }
  if (output.dim() != 2 || output.size(0) != target.size(0)) {
    return InvalidArgument(flag + " needs an output of class scores [B, C]" +
                           " for y " + ShapeText(target) + "; the output is " +
                           ShapeText(output));
  }
  if (target.numel() > 0 && (target.min().item<int64_t>() < 0 ||
                             target.max().item<int64_t>() >= output.size(1))) {
    return InvalidArgument(flag + ": y holds classes " +
                           std::to_string(target.min().item<int64_t>()) + ".." +
                           std::to_string(target.max().item<int64_t>()) +
                           ", the output scores " +
                           std::to_string(output.size(1)));
  }
  return Status::Ok();
}

std::string ShapeText(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i)
    s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

std::string DTypeText(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    default:
      return c10::toString(type);
  }
}

}  // namespace pstrain::models
