#include "bench/seed_runs.h"

#include <cmath>

#include "util/check.h"

namespace pstrain::bench {

namespace {

using nlohmann::json;

// The sample standard deviation of `field` over `runs`; null for one run.
json SampleSd(const std::vector<json>& runs, const char* field, double mean) {
  if (runs.size() < 2)
    return nullptr;
  double squares = 0;
  for (const json& r : runs) {
    const double d = r.value(field, 0.0) - mean;
    squares += d * d;
  }
  return std::sqrt(squares / static_cast<double>(runs.size() - 1));
}

}  // namespace

json MeanOverSeeds(const std::vector<json>& runs) {
  PS_CHECK(!runs.empty()) << "MeanOverSeeds of no run";
  json row = runs.front();
  for (auto& [name, value] : row.items()) {
    if (!value.is_number() || name == "seed")
      continue;
    double sum = 0;
    bool everywhere = true;
    for (const json& r : runs) {
      everywhere = everywhere && r.contains(name) && r[name].is_number();
      sum += everywhere ? r[name].get<double>() : 0.0;
    }
    if (everywhere)
      value = sum / static_cast<double>(runs.size());
  }
  row["seeds"] = json::array();
  row["test_accuracies"] = json::array();
  for (const json& r : runs) {
    row["seeds"].push_back(r.value("seed", json()));
    row["test_accuracies"].push_back(r.value("test_accuracy", json()));
  }
  row["test_accuracy_sd"] =
      SampleSd(runs, "test_accuracy", row.value("test_accuracy", 0.0));
  row["samples_per_second_sd"] = SampleSd(runs, "samples_per_second",
                                          row.value("samples_per_second", 0.0));
  return row;
}

}  // namespace pstrain::bench
