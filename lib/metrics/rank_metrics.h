#pragma once
// The metrics a worker and a server rank export (share/doc/metrics.md
// lists each with its type, unit and labels). Each struct's pointers are
// owned by the Registry they were added to, and live as long as it does.

#include <nlohmann/json_fwd.hpp>

#include "metrics/registry.h"

namespace pstrain::metrics {

/// Bounds of the step-time histogram, in seconds.
std::vector<double> StepSecondsBounds();
/// Bounds of the staleness histogram, in versions.
std::vector<double> StalenessBounds();

struct WorkerMetrics {
  Counter* samples = nullptr;                // training samples computed
  Counter* steps = nullptr;                  // steps pushed
  Counter* pushed_bytes = nullptr;           // written to the servers
  Counter* pulled_bytes = nullptr;           // read from the servers
  Counter* compute_seconds = nullptr;        // batches, forward, backward
  Counter* communication_seconds = nullptr;  // waiting on the servers
  Gauge* version = nullptr;  // rank 0's version of the last parameters
  Gauge* loss = nullptr;     // the last step's training loss
  Histogram* step_seconds = nullptr;
};

/// Adds the worker's metrics to `registry`.
WorkerMetrics AddWorkerMetrics(Registry* registry);

struct ServerMetrics {
  Counter* steps = nullptr;            // optimizer steps this server took
  Counter* pushes_applied = nullptr;   // gradients that went into a step
  Counter* pushes_refused = nullptr;   // non-finite gradients refused
  Counter* pushes_dropped = nullptr;   // left out of a step, or too late
  Counter* pushed_bytes = nullptr;     // read from the workers
  Counter* pulled_bytes = nullptr;     // written to the workers
  Counter* waiting_seconds = nullptr;  // replies held for other workers
  Gauge* version = nullptr;
  Gauge* live_workers = nullptr;
  Histogram* staleness = nullptr;  // async and ssp pushes, in versions
};

/// Adds a server's metrics to `registry`.
ServerMetrics AddServerMetrics(Registry* registry);

/// Rank 0's evaluations.
struct EvalMetrics {
  Gauge* test_accuracy = nullptr;
  Gauge* test_loss = nullptr;
  Gauge* test_perplexity = nullptr;  // language models
};

/// Adds rank 0's evaluation gauges to `registry`.
EvalMetrics AddEvalMetrics(Registry* registry);

/// Sets the gauges from an `eval` event (report/event_log.h's JSON
/// object); any other event, or a field missing, changes nothing.
void NoteEval(const EvalMetrics& metrics, const nlohmann::json& event);

/// Adds pstrain_peak_rss_bytes; the /metrics handler sets it per scrape.
Gauge* AddProcessMetrics(Registry* registry);

}  // namespace pstrain::metrics
