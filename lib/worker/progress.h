#pragma once
// Progress: what a worker has done so far, for its summary and its
// metrics. A plain struct and free functions; not thread-safe.

#include <chrono>
#include <cstdint>

#include "metrics/rank_metrics.h"
#include "report/worker_stats.h"

namespace pstrain::worker {

using Clock = std::chrono::steady_clock;

/// Seconds in `d`.
double Seconds(Clock::duration d);

struct Progress {
  int64_t steps = 0;
  int64_t samples = 0;
  int64_t skipped = 0;       // samples not trained on (a lost shard's)
  double compute = 0;        // seconds
  double communication = 0;  // seconds waited on the servers
  Clock::time_point start = Clock::now();
};

/// Mirrors `p` into `m` (--metrics_port), after a step of `step_seconds`
/// whose loss was `loss`; `version` and the bytes are the ServerGroup's.
void Publish(const Progress& p, double step_seconds, double loss,
             uint64_t version, uint64_t bytes_pushed, uint64_t bytes_pulled,
             const metrics::WorkerMetrics& m);

/// The summary's figures from `p`, as of now (wall_seconds since p.start);
/// the caller adds what the servers and the data tell.
report::WorkerStats StatsOf(const Progress& p);

}  // namespace pstrain::worker
