#include "report/worker_stats.h"

#include <nlohmann/json.hpp>

namespace pstrain::report {

// The one list of the fields' JSON keys: to_json and from_json.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkerStats, steps, samples, skipped_samples,
                                   wall_seconds, samples_per_second,
                                   compute_seconds, communication_seconds,
                                   bytes_pushed, bytes_pulled, version,
                                   reconnects, stopped_early, peak_rss_bytes,
                                   sparse_rows_pushed_per_step,
                                   sparse_rows_pulled_per_step, unique_id_ratio,
                                   sparse_bytes_saved)

nlohmann::json ToJson(const WorkerStats& stats) {
  return stats;
}

Result<WorkerStats> WorkerStatsFromJson(const nlohmann::json& j) {
  try {
    return j.get<WorkerStats>();
  } catch (const nlohmann::json::exception& e) {
    return Corruption(std::string("worker stats: ") + e.what());
  }
}

}  // namespace pstrain::report
