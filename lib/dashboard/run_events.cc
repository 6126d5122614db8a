#include "dashboard/run_events.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <utility>

#include "util/check.h"

namespace pstrain::dashboard {

namespace {

// The events of one (event, rank) thinned as they come: every `stride`-th
// is kept, and when more than `max` are kept every other one is dropped and
// the stride doubles. Each event keeps its line index, so that the Run's
// events can be put back in the file's order.
class Thinned {
 public:
  explicit Thinned(size_t max) : max_(max) {}

  void Add(size_t index, nlohmann::json event) {
    if (seen_++ % stride_ == 0) {
      kept_.emplace_back(index, std::move(event));
      last_kept_ = true;
      if (kept_.size() > max_)
        Halve();
      return;
    }
    last_ = {index, std::move(event)};
    last_kept_ = false;
  }

  // Moves the kept events, and the last one seen, into *out.
  void MoveTo(std::vector<std::pair<size_t, nlohmann::json>>* out) {
    for (auto& e : kept_)
      out->push_back(std::move(e));
    if (!last_kept_)
      out->push_back(std::move(last_));
  }

 private:
  // Keeps the events at even places; the newest, when at an odd place,
  // becomes the last one seen.
  void Halve() {
    if (kept_.size() % 2 == 0) {
      last_ = std::move(kept_.back());
      last_kept_ = false;
    }
    size_t j = 0;
    for (size_t i = 0; i < kept_.size(); i += 2)
      kept_[j++] = std::move(kept_[i]);
    kept_.resize(j);
    stride_ *= 2;
  }

  size_t max_;
  size_t stride_ = 1;
  size_t seen_ = 0;
  std::vector<std::pair<size_t, nlohmann::json>> kept_;
  std::pair<size_t, nlohmann::json> last_;
  bool last_kept_ = true;
};

bool IsKept(const std::string& name) {
  const auto& kept = KeptEvents();
  return std::find(kept.begin(), kept.end(), name) != kept.end();
}

// The line without the carriage return of a file written on Windows.
std::string_view Trimmed(const std::string& line) {
  std::string_view v = line;
  while (!v.empty() && (v.back() == '\r' || v.back() == ' '))
    v.remove_suffix(1);
  return v;
}

}  // namespace

const std::vector<std::string>& KeptEvents() {
  static const std::vector<std::string> kNames = {
      "step", "eval", "epoch", "summary", "job", "progress", "listen"};
  return kNames;
}

Result<Run> ParseRunEvents(std::istream& in, const std::string& source,
                           const RunEventsOptions& options) {
  PS_CHECK(options.max_points_per_rank >= 2);
  std::vector<std::pair<size_t, nlohmann::json>> events;
  std::map<std::pair<std::string, int64_t>, Thinned> thinned;
  size_t index = 0;
  for (std::string line; std::getline(in, line); ++index) {
    const std::string_view text = Trimmed(line);
    if (text.empty() || text.front() != '{')
      continue;
    nlohmann::json e = nlohmann::json::parse(text, nullptr, false);
    if (e.is_discarded() || !e.is_object())
      continue;
    auto name = e.find("event");
    if (name == e.end() || !name->is_string() || !IsKept(*name))
      continue;
    if (*name != "step" && *name != "progress") {
      events.emplace_back(index, std::move(e));
      continue;
    }
    auto rank = e.find("rank");
    const int64_t r = rank != e.end() && rank->is_number_integer()
                          ? rank->get<int64_t>()
                          : -1;
    auto key = std::make_pair(name->get<std::string>(), r);
    auto it = thinned.try_emplace(key, options.max_points_per_rank).first;
    it->second.Add(index, std::move(e));
  }
  for (auto& [key, t] : thinned)
    t.MoveTo(&events);
  if (events.empty()) {
    return InvalidArgument(
        source +
        ": no pstrain event (step, eval, epoch, summary, job, progress, "
        "listen); expected the JSON Lines of pstrain --json");
  }
  std::sort(events.begin(), events.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Run run;
  run.events.reserve(events.size());
  for (auto& e : events)
    run.events.push_back(std::move(e.second));
  return run;
}

Result<Run> ReadRunEvents(const std::string& path,
                          const RunEventsOptions& options) {
  std::ifstream in(path);
  if (!in)
    return NotFound(path + ": cannot open it (a pstrain --json output file)");
  PS_ASSIGN_OR_RETURN(Run run, ParseRunEvents(in, path, options));
  run.name = std::filesystem::path(path).stem().string();
  return run;
}

}  // namespace pstrain::dashboard
