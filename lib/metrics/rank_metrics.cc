#include "metrics/rank_metrics.h"

#include <nlohmann/json.hpp>

namespace pstrain::metrics {

std::vector<double> StepSecondsBounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

std::vector<double> StalenessBounds() {
  return {0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64};
}

WorkerMetrics AddWorkerMetrics(Registry* r) {
  WorkerMetrics m;
  m.samples = r->AddCounter("pstrain_samples_total",
                            "Training samples this worker computed");
  m.steps = r->AddCounter("pstrain_steps_total",
                          "Steps this worker computed and pushed");
  m.pushed_bytes = r->AddCounter("pstrain_pushed_bytes_total",
                                 "Bytes this worker wrote to the servers");
  m.pulled_bytes = r->AddCounter("pstrain_pulled_bytes_total",
                                 "Bytes this worker read from the servers");
  m.compute_seconds =
      r->AddCounter("pstrain_compute_seconds_total",
                    "Seconds of steps not spent waiting for the servers");
  m.communication_seconds =
      r->AddCounter("pstrain_communication_seconds_total",
                    "Seconds of steps spent waiting for the servers");
  m.version = r->AddGauge("pstrain_version",
                          "Rank 0's version of the last parameters received");
  m.loss = r->AddGauge("pstrain_loss", "The last step's training loss");
  m.step_seconds = r->AddHistogram(
      "pstrain_step_seconds", "Seconds per training step", StepSecondsBounds());
  return m;
}

ServerMetrics AddServerMetrics(Registry* r) {
  ServerMetrics m;
  m.steps =
      r->AddCounter("pstrain_steps_total", "Optimizer steps this server took");
  m.pushes_applied = r->AddCounter("pstrain_pushes_applied_total",
                                   "Pushes whose gradients were applied");
  m.pushes_refused = r->AddCounter("pstrain_pushes_refused_total",
                                   "Pushes refused for a non-finite gradient");
  m.pushes_dropped =
      r->AddCounter("pstrain_pushes_dropped_total",
                    "Pushes left out of a step (--backup_workers) or too late");
  m.pushed_bytes = r->AddCounter("pstrain_pushed_bytes_total",
                                 "Bytes the workers wrote to this server");
  m.pulled_bytes = r->AddCounter("pstrain_pulled_bytes_total",
                                 "Bytes the workers read from this server");
  m.waiting_seconds = r->AddCounter(
      "pstrain_waiting_seconds_total",
      "Seconds this server held workers' replies for the others, summed");
  m.version = r->AddGauge("pstrain_version", "This server's version");
  m.live_workers =
      r->AddGauge("pstrain_live_workers", "Workers registered and not lost");
  m.staleness = r->AddHistogram(
      "pstrain_push_staleness",
      "Async and ssp pushes by staleness: the server's version less the "
      "version the gradient was computed on",
      StalenessBounds());
  return m;
}

EvalMetrics AddEvalMetrics(Registry* r) {
  EvalMetrics m;
  m.test_accuracy = r->AddGauge("pstrain_test_accuracy",
                                "The last evaluation's test accuracy");
  m.test_loss =
      r->AddGauge("pstrain_test_loss", "The last evaluation's test loss");
  m.test_perplexity =
      r->AddGauge("pstrain_test_perplexity",
                  "The last evaluation's test perplexity (language models)");
  return m;
}

void NoteEval(const EvalMetrics& m, const nlohmann::json& event) {
  if (!event.is_object() || event.value("event", "") != "eval")
    return;
  auto set = [&event](Gauge* g, const char* field) {
    auto it = event.find(field);
    if (it != event.end() && it->is_number())
      g->Set(it->get<double>());
  };
  set(m.test_accuracy, "test_accuracy");
  set(m.test_loss, "test_loss");
  set(m.test_perplexity, "test_perplexity");
}

Gauge* AddProcessMetrics(Registry* r) {
  return r->AddGauge("pstrain_peak_rss_bytes",
                     "The process's peak resident set size");
}

}  // namespace pstrain::metrics
