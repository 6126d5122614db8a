#pragma once
// DelayCompensation: DC-ASGD's correction of a stale gradient (Zheng et al.,
// "Asynchronous Stochastic Gradient Descent with Delay Compensation", ICML
// 2017, section 4, the constant-lambda form). A worker computed g on the
// parameters w_sent the server last sent it; by the time g arrives the
// server is at w_now. The first-order Taylor term of g around w_sent, with
// the Hessian's diagonal approximated by g*g, gives
//   g' = g + lambda * g * g * (w_now - w_sent).
// State: each worker's w_sent, a copy of every trained dense key (the
// model's bytes per worker, bytes()), and one scratch copy for the
// arithmetic. Row-sparse keys and buffers are left as they are. Not
// thread-safe; the ParameterServer calls it from the Engine's thread.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace pstrain::ps {

class DelayCompensation {
 public:
  /// `params`: the server's keys (float32 or float64, contiguous), which
  /// it reads and never writes; `compensated`, by key: the keys corrected
  /// (the trained dense ones). Every worker's w_sent starts as `params`
  /// are now. REQUIRES: lambda > 0, num_workers >= 1, sizes equal.
  DelayCompensation(double lambda, const std::vector<at::Tensor>& params,
                    const std::vector<bool>& compensated, int num_workers);

  /// The server sent worker `w` the parameters as they are now (a pull's
  /// or a push's reply). Copies them; allocates nothing.
  void NoteSent(int w);

  /// Corrects worker `w`'s gradient in place: grads[k] (each key's
  /// params' dtype and shape) for every compensated key. Allocates
  /// nothing.
  void Correct(int w, const std::vector<at::Tensor>& grads);

  /// Bytes of state per worker (w_sent), and in all (the scratch too).
  uint64_t bytes_per_worker() const { return bytes_per_worker_; }
  uint64_t bytes() const;

 private:
  double lambda_;
  std::vector<at::Tensor> params_;             // the server's, detached views
  std::vector<std::vector<at::Tensor>> sent_;  // [worker][key]
  std::vector<at::Tensor> scratch_;            // [key]
  uint64_t bytes_per_worker_ = 0;
};

}  // namespace pstrain::ps
