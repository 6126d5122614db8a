#pragma once
// Helpers for tests that run whole pstrain processes.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/process.h"

namespace pstrain::testing {

/// The last JSON Lines event named `event` in `out` (under launch, rank 0's
/// summary comes last); null if none.
nlohmann::json FindEvent(const std::string& out, const std::string& event);

/// Every JSON Lines event named `event` in `out`, in order.
std::vector<nlohmann::json> FindEvents(const std::string& out,
                                       const std::string& event);

/// The largest absolute difference between two checkpoints' tensors of the
/// same names; fails the test if names or shapes differ.
double MaxAbsDiff(const std::string& checkpoint_a,
                  const std::string& checkpoint_b);

/// "--flag value" pairs shared by a test's processes.
std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b);

}  // namespace pstrain::testing
