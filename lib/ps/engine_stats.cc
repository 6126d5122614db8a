// The run's totals, for the summary (share/doc/output.md).

#include <algorithm>

#include "ps/engine.h"
#include "ps/engine_peer.h"

namespace pstrain::ps {

// Async and ssp pushes by staleness (server version minus the version the
// gradient was computed on): {"0": n0, "1": n1, ...}, empty buckets left out.
nlohmann::json Engine::StalenessHistogram() const {
  nlohmann::json h = nlohmann::json::object();
  if (spec_.mode == Mode::kSync) return h;
  const auto& counts = server_->staleness_histogram();
  for (size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] > 0) h[std::to_string(s)] = counts[s];
  }
  return h;
}

nlohmann::json Engine::Stats(uint64_t bytes_read, uint64_t bytes_written) const {
  double samples = 0, compute = 0, round_trips = 0, waiting = 0;
  for (const auto& s : worker_stats_) {
    samples += s.value("samples", 0.0);
    compute += s.value("compute_seconds", 0.0);
    round_trips += s.value("communication_seconds", 0.0);
    waiting += s.value("waiting_seconds", 0.0);
  }
  const size_t n = std::max<size_t>(1, worker_stats_.size());
  const double wall =
      registered_ == 0 ? 0.0 : std::chrono::duration<double>(last_done_ - first_register_).count();
  if (plan_) {  // other servers carried most bytes: count the workers' own
    bytes_read = bytes_written = 0;
    for (const auto& s : worker_stats_) {
      bytes_read += s.value("bytes_pushed", uint64_t{0});
      bytes_written += s.value("bytes_pulled", uint64_t{0});
    }
  }
  return {{"bytes_pushed", bytes_read},
          {"bytes_pulled", bytes_written},
          {"num_servers", spec_.num_servers},
          {"shard_imbalance", plan_ ? plan_->imbalance() : 1.0},
          {"samples", samples},
          {"wall_seconds", wall},
          {"samples_per_second", wall > 0 ? samples / wall : 0.0},
          {"compute_seconds", compute / n},
          // A worker's round trips hold the time its reply waited for the
          // other workers; the server measured that part.
          {"communication_seconds", std::max(0.0, round_trips - waiting) / n},
          {"waiting_seconds", waiting / n},
          {"steps", server_->version()},
          {"dropped_pushes", server_->dropped_pushes()},
          {"workers_lost", workers_lost_},
          {"timed_out_steps", timed_out_steps_},
          {"max_clock_gap", ssp_.max_clock_gap()},
          {"refused_pushes", refused_pushes_},
          {"discarded_steps", server_->discarded_steps()},
          {"staleness_histogram", StalenessHistogram()},
          {"workers", worker_stats_}};
}

}  // namespace pstrain::ps
