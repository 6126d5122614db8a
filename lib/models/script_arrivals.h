#pragma once
// Per-layer waits for a TorchScript module, as the built-in models' layers
// wait (Model::Await): parameters of the next version arrive while forward
// runs (worker/param_arrivals.h), so forward must wait for each tensor only
// where it first reads it, not for the whole model before it starts.
//
// InstrumentArrivals rewrites the module's forward graph (with its calls
// inlined) so that every read of a parameter or buffer goes through
// pstrain::arrive(tensor, end): an operator that returns the very tensor
// (autograd sees the tensor itself) after calling this thread's wait with
// `end`, 1 + the tensor's key. An ArrivalScope says which wait that is.
// Free functions and a scope guard; a rewritten module is as thread-safe as
// before, each thread with its own scope.

#include <cstddef>
#include <functional>

#include <ATen/core/Tensor.h>
#include <torch/csrc/jit/api/module.h>

namespace pstrain::models {

/// Rewrites `module`'s forward as above. `end_of(t)`: 1 + the key of
/// tensor `t` (a parameter or buffer of the module), 0 for a tensor that
/// is no key. Returns false, with the graph as it was, where forward reads
/// a tensor it cannot trace to its owner; forward must then wait for every
/// key before it runs. REQUIRES: forward has not run yet.
bool InstrumentArrivals(torch::jit::Module& module,
                        const std::function<size_t(const at::Tensor&)>& end_of);

/// While it lives, pstrain::arrive on this thread calls `*wait` (when set);
/// `wait` must outlive it. Scopes nest.
class ArrivalScope {
 public:
  explicit ArrivalScope(const std::function<void(size_t)>* wait);
  ~ArrivalScope();
  ArrivalScope(const ArrivalScope&) = delete;
  ArrivalScope& operator=(const ArrivalScope&) = delete;

 private:
  const std::function<void(size_t)>* previous_;
};

}  // namespace pstrain::models
