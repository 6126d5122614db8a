#include "worker/step_log.h"

#include <algorithm>

namespace pstrain::worker {

StepLog::StepLog(report::EventLog* log, metrics::Registry* registry)
    : log_(log) {
  if (registry != nullptr)
    meters_ = metrics::AddWorkerMetrics(registry);
}

void StepLog::Step(const StepPlace& at, double loss, const Progress& p) {
  const double wall = Seconds(Clock::now() - p.start);
  log_->Emit("step", {{"epoch", at.epoch + 1},
                      {"step", at.step},
                      {"total_steps", at.total_steps},
                      {"loss", loss},
                      {"version", at.version},
                      {"samples_per_second", p.samples / wall}});
}

void StepLog::Epoch(int64_t epoch, int64_t steps, double loss_sum) {
  log_->Emit("epoch", {{"epoch", epoch + 1},
                       {"steps", steps},
                       {"loss", loss_sum / std::max<int64_t>(1, steps)}});
}

void StepLog::Meter(const Progress& p, double step_seconds, double loss,
                    uint64_t version, uint64_t bytes_pushed,
                    uint64_t bytes_pulled) {
  if (meters_) {
    Publish(p, step_seconds, loss, version, bytes_pushed, bytes_pulled,
            *meters_);
  }
}

}  // namespace pstrain::worker
