#pragma once
// EventHistory: the events of the run so far, as rank 0's live dashboard
// reads them (GET /api/events): its own events (through EventLog's tap)
// and the workers' progress (from their heartbeats). Step and progress
// events are thinned per rank once a rank has more than max_points of
// them (every other one is dropped), so a long run keeps a bounded
// history that still spans it; every other event is kept. Thread-safe.

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pstrain::report {

class EventHistory {
 public:
  /// `max_points`: step or progress events kept per (event, rank) before
  /// thinning. REQUIRES: >= 2.
  explicit EventHistory(size_t max_points = 2000);
  EventHistory(const EventHistory&) = delete;
  EventHistory& operator=(const EventHistory&) = delete;

  /// Keeps `event` (an object with "event", "rank", "role", "time" and its
  /// fields); one that is not an object is ignored.
  void Add(nlohmann::json event);

  /// {"runs":[{"name": name, "events":[...]}]}, the events in the order
  /// added (thinned ones left out).
  std::string RunsJson(const std::string& name) const;

  /// Events kept.
  size_t size() const;

 private:
  mutable std::mutex mu_;
  const size_t max_points_;
  uint64_t next_ = 0;
  // By order of arrival: step/progress per (event, rank), the rest.
  std::map<std::pair<std::string, int>,
           std::vector<std::pair<uint64_t, nlohmann::json>>>
      series_;
  std::vector<std::pair<uint64_t, nlohmann::json>> others_;
};

}  // namespace pstrain::report
