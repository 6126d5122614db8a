#pragma once
// LiveProgress: rank 0's running view of the run for its live dashboard
// (--metrics_port, share/doc/dashboard.md): each worker's progress from
// its heartbeats, and at most once a second rank 0's own version and
// staleness histogram, each handed on as a `progress` event object (the
// form of report/event_log.h's events, with the time it arrived).
// Threading: OnWorker and OnVersion on the Service's io thread; `sink`
// runs there. `*service` and `*server` must outlive it.

#include <chrono>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pstrain::ps {

class ParameterServer;
class Service;

class LiveProgress {
 public:
  using Sink = std::function<void(nlohmann::json event)>;
  LiveProgress(Sink sink, const Service* service,
               const ParameterServer* server);
  LiveProgress(const LiveProgress&) = delete;
  LiveProgress& operator=(const LiveProgress&) = delete;

  /// Worker `rank`'s heartbeat progress (a JSON object of its figures,
  /// worker/progress_board.h): a progress event of role worker with those
  /// fields. Text that is not a JSON object is ignored: it is a peer's.
  void OnWorker(int rank, std::string_view json);
  /// After a new version: a progress event of rank 0 with `version` and
  /// `staleness_histogram`, when a second has passed since the last one.
  void OnVersion();

 private:
  Sink sink_;
  const Service* service_;
  const ParameterServer* server_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace pstrain::ps
