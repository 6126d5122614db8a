#pragma once
// RunEvents: the events of one pstrain run that the dashboard draws, read
// from the JSON Lines that `pstrain serve|work|launch --json` print
// (share/doc/output.md). `launch --json` interleaves its ranks' lines; lines
// that are not JSON objects, and events the page does not draw, are
// skipped. A value type; the functions here are thread-safe (they share no
// state).

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace pstrain::dashboard {

/// The events a page draws, in the order of the file.
struct Run {
  /// The run's name in legends and tables: the file's stem, or "live".
  std::string name;
  /// Event objects exactly as in the JSON Lines (`event`, `rank`, `role`,
  /// `time` and the event's fields), only those of KeptEvents().
  std::vector<nlohmann::json> events;
};

struct RunEventsOptions {
  /// Most `step` events kept per rank (likewise `progress`): a longer run
  /// keeps every k-th of them, k a power of two, and its last one. A
  /// 100,000-step run then still makes a page of a few hundred KB.
  /// Default: 2000. REQUIRES: >= 2.
  size_t max_points_per_rank = 2000;
};

/// The names of the events a Run keeps: step, eval, epoch, summary, job,
/// progress, listen.
const std::vector<std::string>& KeptEvents();

/// Reads the JSON Lines of `in`; `source` names them in errors (a file
/// name). Returns kInvalidArgument ("<source>: no pstrain event ...") when
/// no line is a kept pstrain event (an object with a string `event`).
Result<Run> ParseRunEvents(std::istream& in, const std::string& source,
                           const RunEventsOptions& options);

/// Reads the file at `path` as ParseRunEvents does; the Run is named after
/// the file's stem ("runs/sync.jsonl": "sync"). Returns kNotFound naming the
/// file when it cannot be opened, and ParseRunEvents's errors.
Result<Run> ReadRunEvents(const std::string& path,
                          const RunEventsOptions& options);

}  // namespace pstrain::dashboard
