// Who a sync step waits for: workers lost mid-job leave the step's quorum,
// and workers that come back join it again (Membership, ps/engine/membership.h,
// decides when).

#include "ps/store/parameter_server.h"
#include "util/check.h"

namespace pstrain::ps {

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
  sums_.Remove(w, needed_);
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
