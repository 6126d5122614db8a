#pragma once
// LanguageModel: a Model over token sequences, sequence first, whose hidden
// state the caller carries from one window to the next (truncated BPTT, as
// pytorch/examples' word_language_model does). Model::forward(tokens) is
// Forward from a zero state. Not thread-safe, like any Model.

#include <cstdint>
#include <tuple>
#include <utility>

#include "models/model.h"

namespace pstrain::models {

/// An LSTM's (h, c), each float32 [num_layers, batch, hidden_dim].
using LmState = std::tuple<torch::Tensor, torch::Tensor>;

class LanguageModel : public Model {
 public:
  /// tokens: int64 [T, B], ids below vocab_size(); state: from InitState(B)
  /// or a previous Forward (detach it to cut the graph). Returns
  /// log-probabilities float32 [T*B, vocab_size()] (row t*B + b: position t
  /// of stream b) and the state after the last position.
  virtual std::pair<torch::Tensor, LmState> Forward(const torch::Tensor& tokens,
                                                    const LmState& state) = 0;

  /// Zeros for `batch` streams, on the model's device.
  virtual LmState InitState(int64_t batch) const = 0;

  virtual int64_t vocab_size() const = 0;

  /// Forward(tokens, InitState(tokens.size(1))).first.
  torch::Tensor forward(torch::Tensor tokens) override;
};

/// `state` cut from its graph (both tensors detached).
LmState Detached(const LmState& state);

}  // namespace pstrain::models
