#include "worker/progress_board.h"

#include <nlohmann/json.hpp>

namespace pstrain::worker {

ProgressFigures FiguresOf(const Progress& p, double loss, uint64_t version,
                          uint64_t bytes_pushed, uint64_t bytes_pulled) {
  ProgressFigures f;
  f.steps = p.steps;
  f.samples = p.samples;
  f.loss = loss;
  f.compute_seconds = p.compute;
  f.communication_seconds = p.communication;
  f.bytes_pushed = bytes_pushed;
  f.bytes_pulled = bytes_pulled;
  f.version = version;
  const double wall = Seconds(Clock::now() - p.start);
  f.samples_per_second = wall > 0 ? static_cast<double>(p.samples) / wall : 0;
  return f;
}

std::string ProgressJson(const ProgressFigures& f) {
  // An ordered_json keeps the keys in the order written; dump() writes a
  // NaN or an infinity as null.
  nlohmann::ordered_json j;
  j["steps"] = f.steps;
  j["samples"] = f.samples;
  j["loss"] = f.loss;
  j["compute_seconds"] = f.compute_seconds;
  j["communication_seconds"] = f.communication_seconds;
  j["bytes_pushed"] = f.bytes_pushed;
  j["bytes_pulled"] = f.bytes_pulled;
  j["version"] = f.version;
  j["samples_per_second"] = f.samples_per_second;
  return j.dump();
}

void ProgressBoard::Publish(const ProgressFigures& figures) {
  std::lock_guard<std::mutex> lock(mu_);
  figures_ = figures;
  published_ = true;
}

std::string ProgressBoard::Json() const {
  ProgressFigures f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!published_)
      return "";
    f = figures_;
  }
  return ProgressJson(f);
}

}  // namespace pstrain::worker
