#pragma once
// Loss: how a model's output is scored against a batch's targets, for
// training (the worker, the single process) and evaluation alike. The
// built-in models end in log_softmax and train with kNll; a TorchScript
// module (models/script_model.h) trains with the job's --loss. Free
// functions; thread-safe.

#include <string>

#include <ATen/core/Reduction.h>
#include <torch/types.h>

#include "util/result.h"

namespace pstrain::models {

enum class Loss {
  kCrossEntropy,  // output: logits [B, C]; target: int64 [B]
  kNll,           // output: log-probabilities [B, C]; target: int64 [B]
  kMse,           // output: float [B, ...]; target: float, output's shape
};

/// "cross_entropy", "nll", "mse".
const char* LossName(Loss loss);
/// kInvalidArgument "--loss 'x': expected cross_entropy, nll or mse".
Result<Loss> ParseLoss(const std::string& name);

/// Whether `loss` scores classes (a target is a class index, and accuracy
/// means the argmax's): all but kMse.
bool IsClassification(Loss loss);

/// The loss of `output` against `target`, as PyTorch's
/// F.cross_entropy / F.nll_loss / F.mse_loss compute it with `reduction`
/// (Mean: over the batch, and for kMse over every element). libtorch
/// throws c10::Error on shapes or dtypes that do not fit (CheckTarget says
/// so first, in words).
torch::Tensor ComputeLoss(
    Loss loss, const torch::Tensor& output, const torch::Tensor& target,
    at::Reduction::Reduction reduction = at::Reduction::Mean);

/// Ok when `target` fits `loss` for `output`: an int64 [B] target of class
/// indices below output.size(1) for a 2-D output (classification), or a
/// float target of exactly output's shape (kMse). Otherwise
/// kInvalidArgument, e.g. "--loss mse needs a float target of the output's
/// shape [2, 3]; y is int64 [2]" or "--loss cross_entropy needs int64
/// class indices y [B] (a float y is a regression target: --loss mse); y is
/// float32 [2, 3]".
Status CheckTarget(Loss loss, const torch::Tensor& output,
                   const torch::Tensor& target);

/// "[2, 3]", as Python prints a shape.
std::string ShapeText(const torch::Tensor& t);
/// "float32", "int64", ... as Python names a dtype, without "torch.".
std::string DTypeText(at::ScalarType type);

}  // namespace pstrain::models
