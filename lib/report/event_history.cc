#include "report/event_history.h"

#include <algorithm>

#include "util/check.h"

namespace pstrain::report {

EventHistory::EventHistory(size_t max_points) : max_points_(max_points) {
  PS_CHECK(max_points >= 2) << "max_points " << max_points;
}

void EventHistory::Add(nlohmann::json event) {
  if (!event.is_object())
    return;
  const std::string name = event.value("event", "");
  const int rank = event.value("rank", -1);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t order = next_++;
  if (name != "step" && name != "progress") {
    others_.emplace_back(order, std::move(event));
    return;
  }
  auto& series = series_[{name, rank}];
  series.emplace_back(order, std::move(event));
  if (series.size() <= max_points_)
    return;
  // Every other one goes; the first and the newest stay.
  std::vector<std::pair<uint64_t, nlohmann::json>> kept;
  for (size_t i = 0; i < series.size(); i += 2)
    kept.push_back(std::move(series[i]));
  if (series.size() % 2 == 0)
    kept.push_back(std::move(series.back()));
  series = std::move(kept);
}

std::string EventHistory::RunsJson(const std::string& name) const {
  std::vector<std::pair<uint64_t, const nlohmann::json*>> all;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : others_)
    all.emplace_back(e.first, &e.second);
  for (const auto& [key, series] : series_) {
    for (const auto& e : series)
      all.emplace_back(e.first, &e.second);
  }
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : all)
    events.push_back(*e.second);
  nlohmann::json runs = {
      {"runs", nlohmann::json::array({{{"name", name}, {"events", events}}})}};
  return runs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

size_t EventHistory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = others_.size();
  for (const auto& [key, series] : series_)
    n += series.size();
  return n;
}

}  // namespace pstrain::report
