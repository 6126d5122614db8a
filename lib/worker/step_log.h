#pragma once
// StepLog: what a worker's training loop tells the world as it goes: step
// and epoch events on the EventLog, and, with --metrics_port, every step
// in its metrics (metrics/rank_metrics.h). Not thread-safe: the training
// thread's. `*log` and the registry must outlive it.

#include <cstdint>
#include <optional>

#include "metrics/rank_metrics.h"
#include "report/event_log.h"
#include "worker/progress.h"

namespace pstrain::worker {

/// Where the loop stands when a step is reported.
struct StepPlace {
  int64_t epoch = 0;  // 0-based
  int64_t step = 0;   // the next global step, at most total_steps
  int64_t total_steps = 0;
  uint64_t version = 0;  // rank 0's version of the last parameters
};

class StepLog {
 public:
  /// `registry`: nullptr for no metrics.
  StepLog(report::EventLog* log, metrics::Registry* registry);
  StepLog(const StepLog&) = delete;
  StepLog& operator=(const StepLog&) = delete;

  /// A `step` event: the last step's loss and samples/s since p.start.
  void Step(const StepPlace& at, double loss, const Progress& p);
  /// An `epoch` event: `steps` steps of 0-based `epoch`, their loss summed.
  void Epoch(int64_t epoch, int64_t steps, double loss_sum);
  /// Metrics after every step (a no-op without them): `p` as counted
  /// after a step of `step_seconds` with `loss`.
  void Meter(const Progress& p, double step_seconds, double loss,
             uint64_t version, uint64_t bytes_pushed, uint64_t bytes_pulled);

 private:
  report::EventLog* log_;
  std::optional<metrics::WorkerMetrics> meters_;
};

}  // namespace pstrain::worker
