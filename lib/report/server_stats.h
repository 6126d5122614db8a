#pragma once
// ServerStats: what server rank 0 reports of a run in its `summary` event.
// The engine fills the training totals; the server rank adds the end of the
// run (test accuracy, checkpoint, target). One JSON form, ToJson;
// share/doc/statistics.md documents each field. A value type.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace pstrain::report {

struct ServerStats {
  // Training totals, from the engine.
  /// Bytes the workers wrote to the servers, headers included.
  uint64_t bytes_pushed = 0;
  /// Bytes the workers read from the servers.
  uint64_t bytes_pulled = 0;
  int num_servers = 1;
  /// The largest server's bytes over the mean; 1 with one server.
  double shard_imbalance = 1;
  /// Training samples of all workers.
  int64_t samples = 0;
  /// Samples the workers left out as undecodable (sum of theirs).
  int64_t skipped_samples = 0;
  /// Seconds from the first worker's register to the last one's done.
  double wall_seconds = 0;
  /// samples / wall_seconds; 0 when no time passed.
  double samples_per_second = 0;
  /// Means over workers, in seconds: computing; waiting for the servers
  /// less the part the server held their replies; that part.
  double compute_seconds = 0;
  double communication_seconds = 0;
  double waiting_seconds = 0;
  /// Optimizer steps taken (the final version).
  uint64_t steps = 0;
  /// Pushes left out of a step (--backup_workers) or too late for it.
  uint64_t dropped_pushes = 0;
  uint64_t workers_lost = 0;
  /// Steps taken at --step_timeout without every push.
  uint64_t timed_out_steps = 0;
  /// The most steps any worker ran ahead of the slowest (ssp).
  uint64_t max_clock_gap = 0;
  /// Pushes refused for a non-finite gradient.
  uint64_t refused_pushes = 0;
  /// --replicas: bytes of the copies this server sent its standbys.
  uint64_t standby_bytes = 0;
  /// Steps whose result was not finite and was discarded.
  uint64_t discarded_steps = 0;
  /// async/ssp pushes by staleness, "0", "1", ...; empty buckets left out.
  std::map<std::string, uint64_t> staleness_histogram;

  // The end of the run, from the server rank.
  double test_accuracy = 0;
  double test_loss = 0;
  /// A language model's: exp(test_loss).
  std::optional<double> test_perplexity;
  std::string checkpoint;
  uint64_t checkpoint_version = 0;
  std::string mode;
  std::string model;
  /// The process's peak resident set size, in bytes.
  uint64_t peak_rss_bytes = 0;
  /// With --target_accuracy only: the target, whether an evaluation reached
  /// it, and when (seconds from the first register; the version).
  std::optional<double> target_accuracy;
  /// With --target_perplexity only (the fields below are shared).
  std::optional<double> target_perplexity;
  bool target_reached = false;
  std::optional<double> time_to_target_seconds;
  std::optional<uint64_t> steps_to_target;
};

/// Every field by its name; the four target fields only with a target, the
/// unreached ones as null.
nlohmann::json ToJson(const ServerStats& stats);

}  // namespace pstrain::report
