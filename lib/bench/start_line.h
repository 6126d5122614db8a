#pragma once
// StartLine: where the worker threads of a benchmark case wait for each
// other before each timed window, so that the windows overlap and N
// workers' aggregate GB/s is N workers at once (one that went on alone
// would run at the 1-worker speed). Reusable: each round releases once all
// `workers` have arrived.

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace pstrain::bench {

class StartLine {
 public:
  /// REQUIRES: workers >= 1.
  explicit StartLine(int workers);

  /// Blocks until every worker has arrived for this round, or until Fail.
  /// Returns false once Fail was called (the round may be incomplete).
  bool Arrive();
  /// A worker that failed never arrives again: releases every waiting and
  /// later Arrive for good.
  void Fail();
  /// Workers blocked in Arrive now.
  int waiting() const;

 private:
  const int workers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  bool failed_ = false;
  int blocked_ = 0;
};

}  // namespace pstrain::bench
