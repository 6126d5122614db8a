#pragma once
// TokenClassifier: a test-only model with an embedding table, for row-sparse
// keys (ps/job/sparse_keys.h) before a language model exists: Embedding, the
// mean over each sample's tokens, then a Linear classifier. Its keys, in
// ModelState order: "embedding.weight" [vocab, dim] (row-sparse),
// "fc.weight", "fc.bias". Not thread-safe, like any module.

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "models/model.h"

namespace pstrain::testing {

class TokenClassifier : public models::Model {
 public:
  /// Draws the parameters from torch's global generator.
  TokenClassifier(int64_t vocab, int64_t dim, int64_t classes);

  /// x: int64 [B, T] token ids, each below `vocab`. Returns
  /// log-probabilities, float32 [B, classes].
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Embedding embedding_;
  torch::nn::Linear fc_;
};

}  // namespace pstrain::testing
