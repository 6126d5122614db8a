#pragma once
// --metrics_port: a rank's metrics served over HTTP for Prometheus
// (/metrics), and on rank 0 the run's events for the live dashboard
// (/api/events). Wiring only: the parts are metrics/ and report/.

#include <memory>
#include <string>

#include "apps/pstrain/flags.h"
#include "metrics/http_server.h"
#include "metrics/rank_metrics.h"
#include "metrics/registry.h"
#include "report/event_history.h"
#include "util/result.h"

namespace pstrain::apps {

struct MetricsEndpoint {
  metrics::Registry registry;
  report::EventHistory history;  // rank 0's events and workers' progress
  metrics::EvalMetrics eval;     // rank 0
  metrics::Gauge* peak_rss = nullptr;
  std::unique_ptr<metrics::HttpServer> http;
};

/// Starts serving when --metrics_port is given (nullptr otherwise), with
/// the labels rank and role (the job label comes once the job is known).
/// With --metrics_linger, catches SIGINT and SIGTERM (unless ignored):
/// until the summary they still end the process as by default.
/// kInvalidArgument naming the flag when the port cannot be bound;
/// kIOError when no pipe can be made for the signals.
Result<std::unique_ptr<MetricsEndpoint>> StartMetrics(const LocalFlags& flags,
                                                      int rank,
                                                      const std::string& role);

/// The EventLog for `rank` (MakeEventLog), whose events `endpoint` (may
/// be null) also keeps: rank 0's for the dashboard and its gauges. Its
/// summary event marks the run complete for LingerForScrapes.
std::unique_ptr<report::EventLog> MakeEventLog(const LocalFlags& flags,
                                               int rank,
                                               const std::string& role,
                                               MetricsEndpoint* endpoint);

/// --metrics_linger: keeps serving that many seconds once the run is over,
/// so that the next scrape sees its final values, or until SIGINT or
/// SIGTERM arrives after the summary (StartMetrics catches them then; the
/// process exits 0). No-op without metrics.
void LingerForScrapes(const LocalFlags& flags, const MetricsEndpoint* endpoint);

}  // namespace pstrain::apps
