#pragma once
// StepDeadline: --step_timeout's clock. The workers not in this long after
// a step's first push are stragglers for that step, and it closes with the
// pushes it has. The deadline is armed once per version, when a push leaves
// the step open; it is due once that version is still current at the
// deadline. Counts the steps closed that way, for the summary.
//
// Threading: not thread-safe; the Engine's thread only. Allocates nothing.

#include <cstdint>
#include <optional>

#include "ps/engine/engine_clock.h"

namespace pstrain::ps {

class StepDeadline {
 public:
  /// A push at `now` left the step of `version` open, with `pushes` pushes
  /// in; `seconds`: --step_timeout (<= 0: off). Returns when the deadline
  /// ends (to wake then) the first time for each version; nullopt when it
  /// is off, no push is in, or it is armed for this version already.
  std::optional<Time> Arm(uint64_t version, int pushes, double seconds,
                          Time now);
  /// The version the deadline is armed for, if it has ended at `now` and
  /// that version is still `current`.
  std::optional<uint64_t> Due(uint64_t current, Time now) const;
  /// A step closed on its deadline.
  void CountTimedOut() { ++timed_out_; }
  /// Steps closed on their deadline so far.
  uint64_t timed_out() const { return timed_out_; }

 private:
  uint64_t version_ = UINT64_MAX;  // the step it is armed for
  Time deadline_{};
  uint64_t timed_out_ = 0;
};

}  // namespace pstrain::ps
