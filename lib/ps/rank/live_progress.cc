#include "ps/rank/live_progress.h"

#include "ps/engine/membership.h"
#include "ps/service/service.h"
#include "ps/store/parameter_server.h"
#include "report/server_stats.h"

namespace pstrain::ps {

namespace {

double UnixSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::json ProgressEvent(int rank, const char* role) {
  return {{"event", "progress"},
          {"rank", rank},
          {"role", role},
          {"time", UnixSeconds()}};
}

}  // namespace

LiveProgress::LiveProgress(Sink sink, const Service* service,
                           const ParameterServer* server)
    : sink_(std::move(sink)), service_(service), server_(server) {}

void LiveProgress::OnWorker(int rank, std::string_view json) {
  auto figures = nlohmann::json::parse(json, nullptr, false);
  if (!figures.is_object())
    return;
  nlohmann::json event = ProgressEvent(rank, "worker");
  for (const auto& item : figures.items()) {
    if (!event.contains(item.key()))
      event[item.key()] = item.value();
  }
  sink_(std::move(event));
}

void LiveProgress::OnVersion() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(1))
    return;
  last_ = now;
  nlohmann::json event = ProgressEvent(0, "server");
  event["version"] = server_->version();
  event["live_workers"] = service_->engine().members().live_count();
  event["waiting_seconds"] = service_->engine().members().waiting_seconds_now();
  event["staleness_histogram"] = service_->Stats().staleness_histogram;
  sink_(std::move(event));
}

}  // namespace pstrain::ps
