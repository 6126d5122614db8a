#include "trace/timeline.h"

#include <atomic>
#include <chrono>
#include <fstream>

namespace pstrain::trace {

namespace {

nlohmann::json Metadata(const char* what, int pid, int tid,
                        const std::string& name) {
  return {{"name", what},
          {"ph", "M"},
          {"pid", pid},
          {"tid", tid},
          {"args", {{"name", name}}}};
}

}  // namespace

Timeline::Timeline(int pid, std::string process_name)
    : pid_(pid), process_name_(std::move(process_name)) {
  events_.reserve(1 << 14);
}

int64_t Timeline::Now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int Timeline::ThisThread() {
  static std::atomic<int> next{1};
  thread_local const int tid = next.fetch_add(1);
  return tid;
}

void Timeline::SetKeyNames(std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  key_names_ = std::move(names);
}

void Timeline::NameThread(std::string name) {
  const int tid = ThisThread();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& t : tracks_) {
    if (t.first == tid) {
      t.second = std::move(name);
      return;
    }
  }
  tracks_.emplace_back(tid, std::move(name));
}

int Timeline::Track(std::string name) {
  std::lock_guard<std::mutex> lock(mu_);
  tracks_.emplace_back(next_track_, std::move(name));
  return next_track_++;
}

void Timeline::Record(const Span& span, int64_t begin, int64_t end, int tid) {
  const Event e{span.what,
                static_cast<int32_t>(span.key),
                tid != 0 ? tid : ThisThread(),
                span.version,
                span.step,
                span.bytes,
                begin,
                end > begin ? end - begin : 0};
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(e);
}

size_t Timeline::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

std::string Timeline::NameOf(const Event& e) const {
  std::string name = e.what;
  if (e.key >= 0) {
    name += ' ';
    name += static_cast<size_t>(e.key) < key_names_.size()
                ? key_names_[e.key]
                : "key " + std::to_string(e.key);
  }
  if (e.version >= 0)
    name += " v" + std::to_string(e.version);
  return name;
}

nlohmann::json Timeline::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json events = nlohmann::json::array();
  events.push_back(Metadata("process_name", pid_, 0, process_name_));
  events.push_back(nlohmann::json{{"name", "process_sort_index"},
                                  {"ph", "M"},
                                  {"pid", pid_},
                                  {"tid", 0},
                                  {"args", {{"sort_index", pid_}}}});
  for (const auto& [tid, name] : tracks_)
    events.push_back(Metadata("thread_name", pid_, tid, name));
  for (const Event& e : events_) {
    nlohmann::json args = nlohmann::json::object();
    if (e.key >= 0)
      args["key"] = e.key;
    if (e.version >= 0)
      args["version"] = e.version;
    if (e.step >= 0)
      args["step"] = e.step;
    if (e.bytes > 0)
      args["bytes"] = e.bytes;
    events.push_back({{"name", NameOf(e)},
                      {"cat", e.what},
                      {"ph", "X"},
                      {"ts", e.begin},
                      {"dur", e.dur},
                      {"pid", pid_},
                      {"tid", e.tid},
                      {"args", std::move(args)}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

Status Timeline::WriteFile(const std::string& path) const {
  std::ofstream out(path, std::ios::trunc);
  out << ToJson().dump() << '\n';
  out.close();
  if (!out)
    return IOError("cannot write the timeline " + path);
  return Status::Ok();
}

Status MergeFiles(const std::vector<std::string>& inputs,
                  const std::string& output) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& path : inputs) {
    std::ifstream in(path);
    if (!in)
      continue;
    nlohmann::json one = nlohmann::json::parse(in, nullptr, false);
    if (one.is_discarded() || !one.contains("traceEvents") ||
        !one["traceEvents"].is_array()) {
      return Corruption(path + ": not a trace-event file");
    }
    for (auto& e : one["traceEvents"])
      events.push_back(std::move(e));
  }
  std::ofstream out(output, std::ios::trunc);
  out << nlohmann::json{{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"}}
             .dump()
      << '\n';
  out.close();
  if (!out)
    return IOError("cannot write the timeline " + output);
  return Status::Ok();
}

}  // namespace pstrain::trace
