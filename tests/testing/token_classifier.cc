#include "testing/token_classifier.h"

#include <torch/torch.h>

namespace pstrain::testing {

TokenClassifier::TokenClassifier(int64_t vocab, int64_t dim, int64_t classes)
    : embedding_(
          register_module("embedding", torch::nn::Embedding(vocab, dim))),
      fc_(register_module("fc", torch::nn::Linear(dim, classes))) {}

torch::Tensor TokenClassifier::forward(torch::Tensor x) {
  Await(*embedding_);
  torch::Tensor h = embedding_->forward(x).mean(/*dim=*/1);
  Await(*fc_);
  return torch::log_softmax(fc_->forward(h), /*dim=*/1);
}

}  // namespace pstrain::testing
