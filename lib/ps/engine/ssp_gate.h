#pragma once
// SspGate: each worker's clock (its pushes so far) and the bound of Stale
// Synchronous Parallel (Ho et al., "More Effective Distributed ML via a
// Stale Synchronous Parallel Parameter Server", NIPS 2013, section 3): a
// worker that has finished `clock` steps may start the next one while it is
// at most `staleness` steps ahead of the slowest worker still training.
// Every mode keeps the clocks, for max_clock_gap in the summary; only ssp
// holds replies on the bound. Not thread-safe. Allocates nothing after
// construction.

#include <cstdint>
#include <optional>
#include <vector>

namespace pstrain::ps {

class SspGate {
 public:
  SspGate(int num_workers, uint64_t staleness);

  /// Worker `w`'s push arrived: its clock advances, and how far ahead of
  /// the slowest it computed that step is recorded (max_clock_gap).
  void NotePush(int w);
  /// Whether worker `w` may have the parameters for its next step.
  bool Allows(int w) const;
  /// Worker `w` finished or was lost (false), or rejoined (true): it holds
  /// no one back while out; back in, it starts at the slowest clock.
  void SetTraining(int w, bool training);
  /// Steps ahead of the slowest, at most, over the run.
  uint64_t max_clock_gap() const { return max_clock_gap_; }

 private:
  // The slowest clock among the training workers other than `w` (joined
  // or not yet: a late joiner counts with clock 0); none: no bound.
  std::optional<uint64_t> SlowestOther(int w) const;

  uint64_t staleness_;
  std::vector<uint64_t> clocks_;
  std::vector<bool> training_;
  uint64_t max_clock_gap_ = 0;
};

}  // namespace pstrain::ps
