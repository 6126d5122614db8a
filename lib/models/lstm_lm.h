#pragma once
// LstmLm: the LSTM language model of pytorch/examples' word_language_model
// (RNNModel with rnn_type "LSTM"), with its parameter names, so that a
// state_dict moves between the two:
//   encoder Embedding(vocab, embed_dim) -> drop Dropout(dropout)
//   -> rnn LSTM(embed_dim, hidden_dim, num_layers, dropout)
//   -> drop -> decoder Linear(hidden_dim, vocab) -> log_softmax
// Keys, in order: encoder.weight, rnn.weight_ih_l0, rnn.weight_hh_l0,
// rnn.bias_ih_l0, rnn.bias_hh_l0 (then _l1, ...), decoder.weight,
// decoder.bias. Initialization is the example's init_weights: encoder and
// decoder weights uniform in [-0.1, 0.1], decoder bias 0; the LSTM keeps
// PyTorch's default (uniform in +-1/sqrt(hidden_dim)). With tie_weights the
// decoder's weight is the encoder's tensor (Press & Wolf 2016): one
// parameter, one key (encoder.weight; models/model_state.h).

#include <cstdint>

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/rnn.h>

#include "models/language_model.h"

namespace pstrain::models {

struct LstmLmOptions {
  int64_t vocab_size = 10001;  ///< 10000 words and <unk>
  int64_t embed_dim = 256;
  int64_t hidden_dim = 512;
  int64_t num_layers = 1;
  /// After the embedding, between LSTM layers and before the decoder.
  double dropout = 0;
  /// REQUIRES: embed_dim == hidden_dim when set (the constructor throws
  /// c10::Error otherwise).
  bool tie_weights = false;
};

class LstmLm : public LanguageModel {
 public:
  /// Draws the parameters from torch's global generator.
  explicit LstmLm(const LstmLmOptions& options);

  std::pair<torch::Tensor, LmState> Forward(const torch::Tensor& tokens,
                                            const LmState& state) override;
  LmState InitState(int64_t batch) const override;
  int64_t vocab_size() const override { return options_.vocab_size; }

 private:
  LstmLmOptions options_;
  torch::nn::Embedding encoder_;
  torch::nn::Dropout drop_;
  torch::nn::LSTM rnn_;
  // The decoder as a module of its own holding "weight" and "bias", so that
  // its weight can be the encoder's tensor.
  std::shared_ptr<torch::nn::Module> decoder_;
  torch::Tensor decoder_weight_, decoder_bias_;
};

}  // namespace pstrain::models
