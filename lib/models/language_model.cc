#include "models/language_model.h"

namespace pstrain::models {

torch::Tensor LanguageModel::forward(torch::Tensor tokens) {
  return Forward(tokens, InitState(tokens.size(1))).first;
}

LmState Detached(const LmState& state) {
  return {std::get<0>(state).detach(), std::get<1>(state).detach()};
}

}  // namespace pstrain::models
