#pragma once
// What a `pstrain launch --json` printed, as the training bench reads it:
// rank 0's summary, each worker's, and the first error. Free functions;
// thread-safe.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pstrain::bench {

struct LaunchOutput {
  nlohmann::json server;                // rank 0's summary; null if none
  std::vector<nlohmann::json> workers;  // each worker's summary
  std::string error;                    // the first error event's message
};

/// The summaries and the first error among `out`'s JSON Lines; other
/// lines are skipped.
LaunchOutput ParseLaunchOutput(const std::string& out);

/// The last non-empty line of `text` ("" for none).
std::string LastLine(const std::string& text);

}  // namespace pstrain::bench
