#include "ps/rank/server_metrics_feed.h"

#include <string>
#include <vector>

#include "ps/engine/membership.h"
#include "ps/job/job_id.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "report/server_stats.h"

namespace pstrain::ps {

namespace {

// ServerStats' staleness histogram ("0": n, "1": n, ...) as counts by value.
std::vector<uint64_t> CountsByValue(
    const std::map<std::string, uint64_t>& histogram) {
  std::vector<uint64_t> counts;
  for (const auto& [value, n] : histogram) {
    const size_t v = std::stoul(value);
    if (counts.size() <= v)
      counts.resize(v + 1, 0);
    counts[v] = n;
  }
  return counts;
}

}  // namespace

ServerMetricsFeed::ServerMetricsFeed(metrics::ServerMetrics metrics,
                                     const Service* service,
                                     const ParameterServer* server,
                                     uint64_t start,
                                     std::chrono::milliseconds every)
    : metrics_(metrics),
      service_(service),
      server_(server),
      start_(start),
      every_(every) {}

void ServerMetricsFeed::OnVersion() {
  if (std::chrono::steady_clock::now() - last_ >= every_)
    Publish();
}

void ServerMetricsFeed::Publish() {
  last_ = std::chrono::steady_clock::now();
  const report::ServerStats s = service_->Stats();
  const uint64_t version = server_->version();
  metrics_.version->Set(static_cast<double>(version));
  metrics_.steps->RaiseTo(static_cast<double>(version - start_));
  metrics_.pushes_applied->RaiseTo(static_cast<double>(server_->pushes()));
  metrics_.pushes_refused->RaiseTo(static_cast<double>(s.refused_pushes));
  metrics_.pushes_dropped->RaiseTo(static_cast<double>(s.dropped_pushes));
  metrics_.pushed_bytes->RaiseTo(static_cast<double>(s.bytes_pushed));
  metrics_.pulled_bytes->RaiseTo(static_cast<double>(s.bytes_pulled));
  metrics_.waiting_seconds->RaiseTo(
      service_->engine().members().waiting_seconds_now());
  metrics_.live_workers->Set(service_->engine().members().live_count());
  metrics_.staleness->SetFromValueCounts(CountsByValue(s.staleness_histogram));
}

std::unique_ptr<ServerMetricsFeed> StartMetricsFeed(
    metrics::Registry* registry, const JobSpec& spec, const Service* service,
    const ParameterServer* server) {
  if (registry == nullptr)
    return nullptr;
  registry->SetLabel("job", JobId(spec));
  auto feed = std::make_unique<ServerMetricsFeed>(
      metrics::AddServerMetrics(registry), service, server, server->version(),
      std::chrono::milliseconds(100));
  feed->Publish();
  return feed;
}

}  // namespace pstrain::ps
