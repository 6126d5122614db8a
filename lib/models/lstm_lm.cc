#include "models/lstm_lm.h"

#include <torch/torch.h>

namespace pstrain::models {

namespace nn = torch::nn;

LstmLm::LstmLm(const LstmLmOptions& o)
    : options_(o),
      encoder_(
          register_module("encoder", nn::Embedding(o.vocab_size, o.embed_dim))),
      drop_(register_module("drop", nn::Dropout(o.dropout))),
      rnn_(register_module(
          "rnn", nn::LSTM(nn::LSTMOptions(o.embed_dim, o.hidden_dim)
                              .num_layers(o.num_layers)
                              .dropout(o.num_layers > 1 ? o.dropout : 0.0)))),
      decoder_(register_module("decoder", std::make_shared<nn::Module>())) {
  TORCH_CHECK(!o.tie_weights || o.embed_dim == o.hidden_dim,
              "--tie_weights needs --embed_dim equal to --hidden_dim, got ",
              o.embed_dim, " and ", o.hidden_dim);
  torch::NoGradGuard no_grad;
  encoder_->weight.uniform_(-0.1, 0.1);
  decoder_weight_ =
      o.tie_weights
          ? encoder_->weight
          : torch::empty({o.vocab_size, o.hidden_dim}).uniform_(-0.1, 0.1);
  decoder_weight_ = decoder_->register_parameter("weight", decoder_weight_);
  decoder_bias_ =
      decoder_->register_parameter("bias", torch::zeros({o.vocab_size}));
}

std::pair<torch::Tensor, LmState> LstmLm::Forward(const torch::Tensor& tokens,
                                                  const LmState& state) {
  Await(*encoder_);
  auto emb = drop_->forward(encoder_->forward(tokens));
  Await(*rnn_);
  auto [out, next] = rnn_->forward(emb, state);
  out = drop_->forward(out);
  Await(*decoder_);
  auto decoded = torch::linear(out.reshape({-1, options_.hidden_dim}),
                               decoder_weight_, decoder_bias_);
  return {torch::log_softmax(decoded, /*dim=*/1), next};
}

LmState LstmLm::InitState(int64_t batch) const {
  auto zeros = torch::zeros({options_.num_layers, batch, options_.hidden_dim},
                            encoder_->weight.options());
  return {zeros, zeros.clone()};
}

}  // namespace pstrain::models
