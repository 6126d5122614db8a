#pragma once
// Runs a model's forward with its state arriving on demand, as a worker's
// does while parameters are still on the wire (Model::set_await): every key
// is garbage (NaN; -1 for integer buffers) until forward asks for it, and
// then takes the reference model's value.

#include <cstddef>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "models/model.h"
#include "models/model_state.h"

namespace pstrain::models {

struct KeysOnDemandRun {
  std::vector<size_t> asked;  ///< each await's n, in call order
  size_t keys = 0;            ///< the model's keys (ModelState size)
  bool same_output = false;   ///< forward equals the reference's, exactly
};

/// Both models in eval mode; x as Model::forward takes it. Leaves `model`'s
/// await set to the run's.
inline KeysOnDemandRun ForwardWithKeysOnDemand(Model& model, Model& reference,
                                               const torch::Tensor& x) {
  const auto want = StateValues(reference);
  auto state = StateValues(model);
  torch::NoGradGuard no_grad;
  for (auto& t : state) {
    if (t.is_floating_point())
      t.fill_(std::numeric_limits<float>::quiet_NaN());
    else
      t.fill_(-1);
  }
  KeysOnDemandRun run;
  run.keys = state.size();
  model.set_await([&](size_t n) {
    run.asked.push_back(n);
    for (size_t k = 0; k < n && k < state.size(); ++k)
      state[k].copy_(want[k]);
  });
  model.eval();
  reference.eval();
  run.same_output = model.forward(x).equal(reference.forward(x));
  return run;
}

}  // namespace pstrain::models
