#pragma once
// Dlrm: the Deep Learning Recommendation Model (Naumov et al., 2019,
// "Deep Learning Recommendation Model for Personalization and
// Recommendation Systems", arXiv:1906.00091, sections 2-3), as its
// reference implementation builds it for Criteo's click logs, with the
// reference's state_dict names, so that a checkpoint loads into the
// reference's DLRM_Net with strict=True:
//   dense [B,13] -> bot_l (Linear, ReLU)* -> x [B,d]
//   rows [B,26]  -> emb_l.t EmbeddingBag(rows_t, d, sum), one row a bag
//   -> the dot products of every pair of the 27 vectors (x and the 26
//      embeddings; not of a vector with itself), after x: [B, d + 351]
//   -> top_l (Linear, ReLU)*, Linear -> one logit
// Parameters: bot_l.{0,2,...}.{weight,bias}, emb_l.{t}.weight,
// top_l.{0,2,...}.{weight,bias} (the Sequentials' odd indices are the
// activations; the reference ends top_l in a Sigmoid, which this model
// leaves to the loss, BCE with logits). Not thread-safe (a Module).

#include <cstdint>
#include <vector>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>

#include "models/model.h"

namespace pstrain::models {

struct DlrmOptions {
  int64_t dense_features = 13;
  /// Widths of the bottom MLP's layers; the last is the embedding
  /// dimension. The reference's Kaggle run: 512-256-64-16.
  std::vector<int64_t> bottom = {512, 256, 64, 16};
  /// Widths of the top MLP's layers; the last must be 1. The reference's
  /// Kaggle run: 512-256-1.
  std::vector<int64_t> top = {512, 256, 1};
  /// Rows of each categorical feature's table: by default the Kaggle set's
  /// counts of distinct values, as the reference's preprocessing makes them.
  std::vector<int64_t> table_rows = KaggleTableRows();

  /// The 26 table sizes of the Criteo Kaggle set (33,762,577 rows).
  static std::vector<int64_t> KaggleTableRows();
};

class Dlrm : public Model {
 public:
  /// Draws the parameters from torch's global generator as the reference
  /// does: a Linear(n, m)'s weight from N(0, sqrt(2 / (n + m))) and its bias
  /// from N(0, sqrt(1 / m)); a table of n rows from U(-sqrt(1/n),
  /// sqrt(1/n)). Throws c10::Error when the bottom MLP is empty or the top
  /// MLP does not end in 1, or a table has no rows.
  explicit Dlrm(const DlrmOptions& options);

  /// dense: float32 [B, dense_features]; rows: int64 [B, tables], row t in
  /// [0, table_rows[t]). Returns the logits, float32 [B]. libtorch throws
  /// c10::Error on a wrongly shaped input or a row out of range.
  torch::Tensor Forward(const torch::Tensor& dense, const torch::Tensor& rows);
  /// The Model interface with both inputs in one tensor: x float64
  /// [B, dense_features + tables], the dense features then the rows
  /// (exact in a double). Returns the logits as float32 [B, 1].
  torch::Tensor forward(torch::Tensor x) override;

  const DlrmOptions& options() const { return options_; }

 private:
  // The pairwise dot products of x [B,d] and the embeddings [B,d] each.
  torch::Tensor Interact(const torch::Tensor& x,
                         const std::vector<torch::Tensor>& embedded) const;

  DlrmOptions options_;
  torch::nn::Sequential bot_l_;
  torch::nn::ModuleList emb_l_;
  torch::nn::Sequential top_l_;
  torch::Tensor pairs_;  // int64 [2, pairs]: Interact's (i, j), CPU
};

}  // namespace pstrain::models
