#pragma once
// AsyncRecipe: what an async or ssp server does with a push beyond
// stepping its optimizer on it, each part with its own state:
//   --async_lr       the push's share of the lr (ps/job/optimizer.h);
//   --staleness_lr   a factor by the push's staleness;
//   --delay_compensation  DC-ASGD's correction (ps/rules/delay_compensation.h);
//   --async_momentum lookahead (by default where it applies: UsesLookahead)
//                    parameters sent ahead (ps/rules/lookahead.h);
// the momentum the optimizers are built with (--async_momentum auto) is
// the job's (ServerOptimizerSpec, ps/job/optimizer.h). Not thread-safe;
// the async rule (ps/rules/async_update.h) calls it from the Engine's
// thread.

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/job/job_spec.h"
#include "ps/job/optimizer.h"

namespace torch::optim {
class Optimizer;
}

namespace pstrain::ps {

class DelayCompensation;
class Lookahead;

class AsyncRecipe {
 public:
  /// `params`: the server's keys, borrowed; `dense`, by key: those libtorch's
  /// optimizers train (neither buffers nor row-sparse).
  /// REQUIRES: ValidateJobSpec(spec).ok(), and spec's rule applies each
  /// push (async, ssp).
  AsyncRecipe(const JobSpec& spec, const std::vector<at::Tensor>& params,
              const std::vector<bool>& dense);
  ~AsyncRecipe();

  /// The factor on the scheduled lr of a push `staleness` versions old:
  /// AsyncLrShare times StalenessScale; 1 in sync.
  double LrScale(uint64_t staleness) const;
  /// Corrects worker `w`'s pushed gradients in place (DC-ASGD), before
  /// the step; a no-op without --delay_compensation.
  void Correct(int w, const std::vector<at::Tensor>& grads);
  /// The server is sending worker `w` its parameters; `lr` is the lr a
  /// fresh push steps with now, `optimizers` the dense ones.
  void NoteSent(int w, double lr,
                const std::vector<torch::optim::Optimizer*>& optimizers);
  /// What worker `w` is sent of `key` instead of the parameters
  /// (lookahead), or nullptr: the parameters themselves.
  const at::Tensor* Sent(int w, int key) const;
  /// Bytes of --delay_compensation state per worker (0: off).
  uint64_t delay_compensation_bytes_per_worker() const;

 private:
  double share_ = 1;
  StalenessLr staleness_lr_;
  std::unique_ptr<DelayCompensation> dc_;
  std::unique_ptr<Lookahead> lookahead_;
};

}  // namespace pstrain::ps
