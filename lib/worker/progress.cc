#include "worker/progress.h"

#include "util/resources.h"

namespace pstrain::worker {

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

report::WorkerStats StatsOf(const Progress& p) {
  report::WorkerStats stats;
  stats.steps = p.steps;
  stats.samples = p.samples;
  stats.skipped_samples = p.skipped;
  stats.wall_seconds = Seconds(Clock::now() - p.start);
  stats.samples_per_second =
      stats.wall_seconds > 0
          ? static_cast<double>(stats.samples) / stats.wall_seconds
          : 0.0;
  stats.compute_seconds = p.compute;
  stats.communication_seconds = p.communication;
  stats.peak_rss_bytes = PeakRssBytes();
  return stats;
}

}  // namespace pstrain::worker
