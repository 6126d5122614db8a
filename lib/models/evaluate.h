#pragma once
// Scoring a model on a labelled set: mean negative log-likelihood and
// accuracy, in eval() mode (dropout off) and without autograd.

#include <cstdint>

#include <torch/types.h>

#include "models/model.h"

namespace pstrain::models {

struct EvalResult {
  double accuracy = 0;  // fraction of correct argmax predictions, 0..1
  double loss = 0;      // mean NLL over all samples
  int64_t samples = 0;
};

/// images: float32 [N,1,28,28]; labels: int64 [N]; both CPU. Runs batches of
/// `batch_size` samples on the model's device. Leaves the model in eval()
/// mode; the caller switches back to train() if it trains on.
/// REQUIRES: N == labels.size(0), batch_size >= 1.
EvalResult Evaluate(Model& model, const torch::Tensor& images,
                    const torch::Tensor& labels, int64_t batch_size = 1000);

}  // namespace pstrain::models
