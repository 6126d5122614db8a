#pragma once
// What this process has used of the machine, for summaries and benchmarks.

#include <cstdint>

namespace pstrain {

/// Largest resident set size this process has had so far, in bytes
/// (getrusage's ru_maxrss).
uint64_t PeakRssBytes();

}  // namespace pstrain
