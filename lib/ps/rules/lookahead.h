#pragma once
// Lookahead: the parameters an async worker is sent are where the server's
// momentum will have carried them by the time that worker's gradient is
// applied, so that the gradient is computed close to where it lands (DANA,
// Hakimi et al., "Taming Momentum in a Distributed Asynchronous
// Environment", 2019, section 4). With sgd momentum mu, lr eta per push and
// tau pushes of the other workers in between (tau = workers - 1), the
// momentum alone moves w by -eta * mu (1 - mu^tau) / (1 - mu) * v, v the
// momentum buffer; a worker is sent
//   w_sent = w - eta * mu (1 - mu^tau) / (1 - mu) * v.
// The server steps its own w as ever. State: one copy of the trained dense
// keys per worker (a reply's bytes stay put until that worker's next
// reply, which comes only after its next push). Not thread-safe.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::optim {
class Optimizer;
}

namespace pstrain::ps {

class Lookahead {
 public:
  /// `params`: the server's keys; `trained`, by key: those an sgd
  /// optimizer steps (others are sent as they are). REQUIRES: 0 < momentum
  /// < 1, num_workers >= 1, sizes equal.
  Lookahead(double momentum, const std::vector<at::Tensor>& params,
            const std::vector<bool>& trained, int num_workers);

  /// Fills worker `w`'s copy: w - lr * factor() * v for every trained key,
  /// v its momentum buffer in `optimizers` (zero before its first step).
  void Prepare(int w, double lr,
               const std::vector<torch::optim::Optimizer*>& optimizers);
  /// Worker `w`'s copy of `key` (the last Prepare's), or the server's own
  /// tensor for a key not trained.
  const at::Tensor& Sent(int w, int key) const;
  /// mu (1 - mu^tau) / (1 - mu), tau = num_workers - 1.
  double factor() const { return factor_; }
  uint64_t bytes_per_worker() const { return bytes_per_worker_; }

 private:
  double factor_;
  std::vector<at::Tensor> params_;   // the server's, detached views
  std::vector<at::Tensor> stepped_;  // the server's, as its optimizers key them
  std::vector<at::Tensor> momentum_;  // sgd's buffer by key, once it exists
  std::vector<std::vector<at::Tensor>>
      sent_;  // [worker][key]; undefined: as is
  uint64_t bytes_per_worker_ = 0;
};

}  // namespace pstrain::ps
