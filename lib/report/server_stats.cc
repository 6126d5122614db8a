#include "report/server_stats.h"

#include <nlohmann/json.hpp>

namespace pstrain::report {

namespace {

nlohmann::json OrNull(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json OrNull(const std::optional<uint64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json ToJson(const ServerStats& s) {
  nlohmann::json j = {{"bytes_pushed", s.bytes_pushed},
                      {"bytes_pulled", s.bytes_pulled},
                      {"num_servers", s.num_servers},
                      {"shard_imbalance", s.shard_imbalance},
                      {"samples", s.samples},
                      {"skipped_samples", s.skipped_samples},
                      {"wall_seconds", s.wall_seconds},
                      {"samples_per_second", s.samples_per_second},
                      {"compute_seconds", s.compute_seconds},
                      {"communication_seconds", s.communication_seconds},
                      {"waiting_seconds", s.waiting_seconds},
                      {"steps", s.steps},
                      {"dropped_pushes", s.dropped_pushes},
                      {"workers_lost", s.workers_lost},
                      {"timed_out_steps", s.timed_out_steps},
                      {"max_clock_gap", s.max_clock_gap},
                      {"refused_pushes", s.refused_pushes},
                      {"standby_bytes", s.standby_bytes},
                      {"discarded_steps", s.discarded_steps},
                      {"staleness_histogram", s.staleness_histogram},
                      {"test_accuracy", s.test_accuracy},
                      {"test_loss", s.test_loss},
                      {"checkpoint", s.checkpoint},
                      {"checkpoint_version", s.checkpoint_version},
                      {"mode", s.mode},
                      {"model", s.model},
                      {"peak_rss_bytes", s.peak_rss_bytes}};
  if (s.test_perplexity)
    j["test_perplexity"] = *s.test_perplexity;
  if (s.target_perplexity)
    j["target_perplexity"] = *s.target_perplexity;
  if (s.target_accuracy || s.target_perplexity) {
    if (s.target_accuracy)
      j["target_accuracy"] = *s.target_accuracy;
    j["target_reached"] = s.target_reached;
    j["time_to_target_seconds"] = OrNull(s.time_to_target_seconds);
    j["steps_to_target"] = OrNull(s.steps_to_target);
  }
  return j;
}

}  // namespace pstrain::report
