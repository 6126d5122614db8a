#pragma once
// WorkerStats: what a worker reports of its run once it is done: in its
// `summary` event, and in its `done` message to every server (rank 0 sums
// them into its ServerStats). One JSON form, ToJson and
// WorkerStatsFromJson; share/doc/statistics.md documents each field. It
// lives in lib/report, which servers link too, so that a server reads them
// without the worker library. A value type.

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "util/result.h"

namespace pstrain::report {

struct WorkerStats {
  /// Steps this worker computed and pushed.
  int64_t steps = 0;
  /// Training samples of those steps.
  int64_t samples = 0;
  /// Samples of those steps' batches left out because their files could not
  /// be decoded (a corrupt image; each time it was drawn).
  int64_t skipped_samples = 0;
  /// Seconds from the first pull to the end of training.
  double wall_seconds = 0;
  /// samples / wall_seconds; 0 when no time passed.
  double samples_per_second = 0;
  /// Seconds of steps not spent waiting for the servers: batches, forward,
  /// backward.
  double compute_seconds = 0;
  /// Seconds of steps spent waiting for the servers: pulls, push-pull round
  /// trips, and parameters a forward waited for.
  double communication_seconds = 0;
  /// Bytes written to all servers, frames and authentication included.
  uint64_t bytes_pushed = 0;
  /// Bytes read from all servers.
  uint64_t bytes_pulled = 0;
  /// Rank 0's version of the last parameters received.
  uint64_t version = 0;
  /// Times the worker reconnected to servers it had lost.
  int64_t reconnects = 0;
  /// Whether rank 0 stopped the job before its end (--target_accuracy).
  bool stopped_early = false;
  /// The process's peak resident set size, in bytes.
  uint64_t peak_rss_bytes = 0;
  /// Row-sparse keys (--sparse_embeddings): rows pushed and asked for per
  /// push_pull, over all servers; 0 without such keys.
  double sparse_rows_pushed_per_step = 0;
  double sparse_rows_pulled_per_step = 0;
  /// Unique ids over ids looked up, of the batches pushed (1: no id
  /// repeats); 0 without row-sparse keys.
  double unique_id_ratio = 0;
  /// Bytes of row-sparse keys that push_pulls did not carry, against
  /// whole tables both ways (rows' ids counted as sent).
  uint64_t sparse_bytes_saved = 0;
};

/// Every field, by its name.
nlohmann::json ToJson(const WorkerStats& stats);
/// kCorruption naming the missing or mistyped field (stats come from a
/// peer). Unknown keys are ignored.
Result<WorkerStats> WorkerStatsFromJson(const nlohmann::json& j);

}  // namespace pstrain::report
