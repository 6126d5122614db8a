#include "worker/progress.h"

#include "util/resources.h"

namespace pstrain::worker {

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

void Publish(const Progress& p, double step_seconds, double loss,
             uint64_t version, uint64_t bytes_pushed, uint64_t bytes_pulled,
             const metrics::WorkerMetrics& m) {
  m.samples->RaiseTo(static_cast<double>(p.samples));
  m.steps->RaiseTo(static_cast<double>(p.steps));
  m.compute_seconds->RaiseTo(p.compute);
  m.communication_seconds->RaiseTo(p.communication);
  m.pushed_bytes->RaiseTo(static_cast<double>(bytes_pushed));
  m.pulled_bytes->RaiseTo(static_cast<double>(bytes_pulled));
  m.version->Set(static_cast<double>(version));
  m.loss->Set(loss);
  m.step_seconds->Observe(step_seconds);
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
