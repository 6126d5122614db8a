// The run's totals, for the summary (share/doc/statistics.md).

#include <algorithm>

#include "ps/engine/engine.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/membership.h"
#include "ps/engine/reply_desk.h"
#include "ps/engine/snapshot_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/job/shard_plan.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "report/server_stats.h"

namespace pstrain::ps {

namespace {

// Async and ssp pushes by staleness (server version minus the version the
// gradient was computed on), empty buckets left out.
std::map<std::string, uint64_t> StalenessHistogram(
    const std::vector<uint64_t>& counts) {
  std::map<std::string, uint64_t> h;
  for (size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] > 0)
      h[std::to_string(s)] = counts[s];
  }
  return h;
}

}  // namespace

report::ServerStats Engine::Stats(uint64_t bytes_read,
                                  uint64_t bytes_written) const {
  report::ServerStats s;
  const UpdateRule& rule = steps_->rule();
  double compute = 0, round_trips = 0;
  const std::vector<report::WorkerStats>& workers = members_->stats();
  const double waiting = members_->waiting_seconds();
  for (const auto& w : workers) {
    s.samples += w.samples;
    s.skipped_samples += w.skipped_samples;
    compute += w.compute_seconds;
    round_trips += w.communication_seconds;
  }
  const double n = static_cast<double>(std::max<size_t>(1, workers.size()));
  s.wall_seconds = members_->registered() == 0
                       ? 0.0
                       : std::chrono::duration<double>(
                             members_->last_done() - members_->first_register())
                             .count();
  s.samples_per_second = s.wall_seconds > 0 ? s.samples / s.wall_seconds : 0.0;
  s.compute_seconds = compute / n;
  // A worker's round trips hold the time its reply waited for the other
  // workers; the server measured that part.
  s.communication_seconds = std::max(0.0, round_trips - waiting) / n;
  s.waiting_seconds = waiting / n;
  s.bytes_pushed = bytes_read;
  s.bytes_pulled = bytes_written;
  if (master_->roster().expecting()) {  // other servers carried most bytes:
                                        // count the workers' own
    s.bytes_pushed = s.bytes_pulled = 0;
    for (const auto& w : workers) {
      s.bytes_pushed += w.bytes_pushed;
      s.bytes_pulled += w.bytes_pulled;
    }
  }
  s.num_servers = spec_.num_servers;
  s.shard_imbalance = master_->roster().expecting()
                          ? master_->roster().plan()->imbalance()
                          : 1.0;
  s.steps = server_->version();
  s.dropped_pushes = rule.dropped_pushes();
  s.workers_lost = members_->losses();
  s.timed_out_steps = steps_->timed_out_steps();
  s.max_clock_gap = replies_->ssp().max_clock_gap();
  s.refused_pushes = rule.refused_pushes();
  s.standby_bytes = snapshots_->standby_bytes();
  s.discarded_steps = rule.discarded_steps();
  if (rule.traits().applies_each_push)
    s.staleness_histogram = StalenessHistogram(rule.staleness_histogram());
  return s;
}

}  // namespace pstrain::ps
