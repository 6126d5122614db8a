#pragma once
// RandomState: the default CPU generator's state, kept before a step's
// forward, so that a step computed again draws the dropout masks of its
// first try. With --replicas a standby that took a lost server's shard
// over makes the step the forward had read stale parameters for; the step
// is then computed again, and the run stays that of one that lost no
// server. (A model on a GPU draws from the device's generator, which this
// does not keep.)
//
// Threading: the training thread's, like the generator it keeps.

#include <ATen/core/Tensor.h>

namespace pstrain::worker {

class RandomState {
 public:
  /// Keeps the generator's state as it is now.
  void Keep();
  /// Sets the generator back to the state Keep kept. REQUIRES: Keep.
  void Restore();

 private:
  at::Tensor state_;  // uint8: the generator's own serialization
};

}  // namespace pstrain::worker
