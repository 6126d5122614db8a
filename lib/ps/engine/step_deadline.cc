#include "ps/engine/step_deadline.h"

#include <chrono>

namespace pstrain::ps {

std::optional<Time> StepDeadline::Arm(uint64_t version, int pushes,
                                      double seconds, Time now) {
  if (seconds <= 0 || pushes == 0 || version_ == version)
    return std::nullopt;
  version_ = version;
  deadline_ = now + std::chrono::duration_cast<EngineClock::duration>(
                        std::chrono::duration<double>(seconds));
  return deadline_;
}

std::optional<uint64_t> StepDeadline::Due(uint64_t current, Time now) const {
  if (version_ != current || now < deadline_)
    return std::nullopt;
  return version_;
}

}  // namespace pstrain::ps
