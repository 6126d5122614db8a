// Who a sync step waits for: workers lost mid-job leave the step's quorum,
// and workers that come back join it again (Membership, ps/membership.h,
// decides when).

#include <ATen/ATen.h>

#include "ps/parameter_server.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

template <typename T>
void Divide(void* acc, uint64_t n, int count) {
  T* dst = static_cast<T*>(acc);
  for (uint64_t i = 0; i < n; ++i)
    dst[i] /= T(count);
}

}  // namespace

// A lost worker's complete push still counts for this step. Otherwise the
// step stops waiting for it: the pieces it got in stay in the sums (each
// piece is the mean of the gradients that reached it), and the pieces that
// only waited for it are done now.
bool ParameterServer::RemoveWorker(int w) {
  PS_CHECK(w >= 0 && w < num_workers_ && live_[w])
      << "RemoveWorker(" << w << ")";
  StepAllKeys();  // the accumulators may change
  live_[w] = false;
  --live_count_;
  if (applies_each_push() || pushed_[w])
    return false;
  --needed_;
  if (buffers_pushes()) {
    return push_count_ > 0 && push_count_ >= std::min(quorum_, needed_) &&
           CloseStep();
  }
  for (int k = 0; k < num_keys(); ++k) {
    at::Tensor& acc = accumulators_[k];
    const uint64_t nbytes = acc.nbytes();
    for (uint64_t off = 0; off < nbytes; off += kPieceBytes) {
      const size_t piece = pieces_.base[k] + off / kPieceBytes;
      if (pieces_.contributed[w][piece]) {
        ++pieces_.extra[piece];
        continue;
      }
      const int arrivals = pieces_.arrivals[piece];
      if (arrivals == 0 || arrivals != needed_ + pieces_.extra[piece])
        continue;
      char* base = static_cast<char*>(acc.data_ptr()) + off;
      const uint64_t n =
          std::min(kPieceBytes, nbytes - off) / acc.element_size();
      if (acc.scalar_type() == at::kFloat) {
        Divide<float>(base, n, arrivals);
      } else if (acc.scalar_type() == at::kDouble) {
        Divide<double>(base, n, arrivals);
      } else {
        Divide<int64_t>(base, n, arrivals);
      }
    }
  }
  if (needed_ == 0 || push_count_ < needed_)
    return false;
  FinishStep();
  return true;
}

bool ParameterServer::AddWorker(int w) {
  PS_CHECK(w >= 0 && w < num_workers_ && !live_[w]) << "AddWorker(" << w << ")";
  live_[w] = true;
  ++live_count_;
  if (applies_each_push() || step_started_)
    return false;
  needed_ = live_count_;
  return true;
}

}  // namespace pstrain::ps
