#pragma once
// Intervals of versions or of seconds (--eval_interval, --checkpoint_every)
// and the schedule that says at which version the next one falls. A value
// type and a thread-compatible class.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "util/result.h"

namespace pstrain::ps {

struct Interval {
  uint64_t steps = 0;                 // every this many versions; 0: never
  std::chrono::milliseconds time{0};  // or after this long; 0: never
  bool empty() const { return steps == 0 && time.count() == 0; }
};

/// Parses "N" (versions, N >= 1) or "Ns" (seconds, N > 0, may be
/// fractional); with `allow_zero`, "0" is the empty interval.
/// kInvalidArgument "--checkpoint_every 'x': expected N (steps, >= 1) or Ns
/// (seconds, > 0)", naming `flag`.
Result<Interval> ParseInterval(const std::string& flag, const std::string& text,
                               bool allow_zero = false);

/// The text ParseInterval reads back: "100", "2.5s", "0" when empty.
std::string FormatInterval(const Interval& interval);

/// When an interval's next act is due, from the version it was last done at.
class IntervalSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  /// Counts from `version` at `now` (the run's start, or a resumed version).
  IntervalSchedule(Interval every, uint64_t version, Clock::time_point now);

  /// The version to act at, given the current `version` and `lead` versions
  /// of notice (what a snapshot from several servers needs,
  /// ps/rank/observer.h): every N versions, the next multiple of N once version
  /// + lead reaches it (a multiple already passed is skipped: acts stay on
  /// multiples); every T seconds, version + lead once T has passed since the
  /// last act. nullopt while none is due, and always for an empty interval.
  std::optional<uint64_t> Due(uint64_t version, uint64_t lead,
                              Clock::time_point now) const;

  /// Records an act at `version` at `now`.
  void Done(uint64_t version, Clock::time_point now);

 private:
  Interval every_;
  uint64_t last_version_;
  Clock::time_point last_time_;
};

}  // namespace pstrain::ps
