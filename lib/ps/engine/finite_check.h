#pragma once
// Finite-value checks for pushed gradients. A gradient holding NaN or Inf
// would poison the model for good (one step spreads it to every weight the
// optimizer touches), so the Engine refuses such a push before it reaches
// the optimizer. Plain loops over raw bytes: no allocation, no torch ops, so
// they can run on each 512 KiB piece as it arrives. Thread-compatible.

#include <cstdint>

#include <c10/core/ScalarType.h>

namespace pstrain::ps {

/// Whether all `bytes / element size` elements at `data` are finite.
/// kLong (a buffer's count, num_batches_tracked) is always finite.
/// REQUIRES: dtype kFloat, kDouble or kLong (what keys may be), bytes a
/// multiple of the element size; `data` at any alignment.
bool AllFinite(const void* data, uint64_t bytes, at::ScalarType dtype);

}  // namespace pstrain::ps
