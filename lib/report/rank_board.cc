#include "report/rank_board.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "report/human_format.h"
#include "util/check.h"

namespace pstrain::report {
namespace {

constexpr int kBarCells = 20;

double SteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double NumberOr(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// "1:02:03" or "2:03".
std::string Clock(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
                  s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

// The event's fields but the envelope and the structured ones (the job
// spec, histograms), which would fill the screen; --json has them all.
nlohmann::json Fields(const nlohmann::json& event) {
  nlohmann::json fields = nlohmann::json::object();
  for (auto it = event.begin(); it != event.end(); ++it) {
    const std::string& k = it.key();
    if (k == "event" || k == "rank" || k == "role" || k == "time")
      continue;
    if (!it->is_structured())
      fields[k] = *it;
  }
  return fields;
}

}  // namespace

RankBoard::RankBoard(RankBoardOptions options, std::vector<std::string> labels)
    : options_(std::move(options)) {
  PS_CHECK(options_.out != nullptr);
  if (!options_.now)
    options_.now = SteadySeconds;
  for (std::string& label : labels)
    rows_.push_back(Row{std::move(label)});
}

std::string RankBoard::Bar(double step, double total, double loss,
                           double samples_per_second, double eta_seconds) {
  const double done = total > 0 ? std::min(1.0, step / total) : 0;
  const int cells = static_cast<int>(done * kBarCells);
  char buf[160];
  std::snprintf(
      buf, sizeof(buf), "[%s%s] %.0f/%.0f loss %.4f %.0f samples/s ETA %s",
      std::string(cells, '#').c_str(),
      std::string(kBarCells - cells, '-').c_str(), step, total, loss,
      samples_per_second, eta_seconds < 0 ? "?" : Clock(eta_seconds).c_str());
  return buf;
}

// The ETA comes from the steps this board has seen and the time they took,
// not from samples/s, which counts from the worker's own start.
std::string RankBoard::StepText(Row& row, const nlohmann::json& event) {
  const double step = NumberOr(event, "step", 0);
  const double total = NumberOr(event, "total_steps", 0);
  const double now = options_.now();
  if (row.first_step < 0) {
    row.first_step = step;
    row.first_time = now;
  }
  double eta = -1;
  if (step > row.first_step) {
    eta = (total - step) * (now - row.first_time) / (step - row.first_step);
  }
  return Bar(step, total, NumberOr(event, "loss", 0),
             NumberOr(event, "samples_per_second", 0), eta);
}

void RankBoard::Event(size_t row_index, const nlohmann::json& event) {
  PS_CHECK(row_index < rows_.size()) << "row " << row_index;
  Row& row = rows_[row_index];
  const std::string name = event.value("event", "");
  if (name == "step") {
    row.stepped = true;
    row.text = StepText(row, event);
    Redraw("");
    return;
  }
  const std::string human = FormatHuman(name, Fields(event));
  if (name == "summary" || name == "error") {
    row.text = human;
    Redraw("");
    return;
  }
  if (!row.stepped)
    row.text = human;
  Redraw("[" + row.label + "] " + human);
}

void RankBoard::Line(size_t row, const std::string& line) {
  PS_CHECK(row <= rows_.size()) << "row " << row;
  Redraw(row < rows_.size() ? "[" + rows_[row].label + "] " + line : line);
}

std::string RankBoard::Fit(const std::string& line) const {
  const size_t columns = static_cast<size_t>(std::max(options_.width - 1, 1));
  return line.size() <= columns ? line : line.substr(0, columns);
}

// Moves up over the rows drawn last, clears to the end of the screen, prints
// `above` (if any) where the rows were, and draws the rows below it.
void RankBoard::Redraw(const std::string& above) {
  std::ostream& out = *options_.out;
  if (drawn_)
    out << "\r\033[" << rows_.size() << "A\033[J";
  if (!above.empty())
    out << above << "\n";
  for (const Row& row : rows_)
    out << Fit("[" + row.label + "] " + row.text) << "\n";
  out.flush();
  drawn_ = true;
}

}  // namespace pstrain::report
