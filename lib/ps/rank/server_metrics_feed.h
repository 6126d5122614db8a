#pragma once
// ServerMetricsFeed: a server's figures (metrics/rank_metrics.h), copied
// from its Service and ParameterServer on the io thread after new
// versions, at most once per `every`, so that a scrape reads them without
// ever waiting on the io thread, and the io thread pays a few
// microseconds per `every`, not per version.
// Threading: OnVersion and Publish on the Service's io thread. `*service`
// and `*server` must outlive the feed; the metrics are the Registry's.

#include <chrono>
#include <cstdint>
#include <memory>

#include "metrics/rank_metrics.h"
#include "ps/job/job_spec.h"

namespace pstrain::ps {

class ParameterServer;
class Service;

class ServerMetricsFeed {
 public:
  /// `start`: the version the run starts from (a resumed run's).
  ServerMetricsFeed(metrics::ServerMetrics metrics, const Service* service,
                    const ParameterServer* server, uint64_t start,
                    std::chrono::milliseconds every);
  ServerMetricsFeed(const ServerMetricsFeed&) = delete;
  ServerMetricsFeed& operator=(const ServerMetricsFeed&) = delete;

  /// After a new version: publishes when `every` has passed since the
  /// last time.
  void OnVersion();
  /// Publishes now (at the start and the end of the run).
  void Publish();

 private:
  const metrics::ServerMetrics metrics_;
  const Service* service_;
  const ParameterServer* server_;
  const uint64_t start_;
  const std::chrono::milliseconds every_;
  std::chrono::steady_clock::time_point last_{};
};

/// With a registry (--metrics_port): labels it with the job's id
/// (ps/job/job_id.h), adds the server's metrics and returns their feed,
/// published once. nullptr without.
std::unique_ptr<ServerMetricsFeed> StartMetricsFeed(
    metrics::Registry* registry, const JobSpec& spec, const Service* service,
    const ParameterServer* server);

}  // namespace pstrain::ps
