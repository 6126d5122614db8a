#pragma once
// Helpers for tests that run whole pstrain processes.

#include <cstdint>
#include <string>
#include <utility>
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

/// Writes `lines` lines of 1-12 words drawn from 40 ("w0".."w39", some
/// more often than others) to `path`; the same text for the same `seed`.
void WriteText(const std::string& path, int lines, uint32_t seed);

/// A tiny corpus for --dataset text in `dir`: train.txt (60 lines),
/// valid.txt (10) and test.txt (20) of WriteText.
void WriteTinyCorpus(const std::string& dir);

/// Waits up to `timeout_seconds` (polling every 20 ms) for a complete
/// periodic checkpoint of `base` (ps::CompleteCheckpoints); the newest,
/// (version, path), or (0, "") on timeout.
std::pair<uint64_t, std::string> WaitForCheckpoint(const std::string& base,
                                                   double timeout_seconds);

/// "--flag value" pairs shared by a test's processes.
std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b);

}  // namespace pstrain::testing
