#pragma once
// The limits a figure of `pstrain bench` is measured against, taken in the
// same run: a plain TCP socket pair on 127.0.0.1 (blocking POSIX sockets,
// TCP_NODELAY, one thread per end) and memcpy. GB/s are 1e9 bytes per second.

#include <cstdint>

#include "util/result.h"

namespace pstrain::bench {

/// One-way streaming: the sender writes messages of `bytes` back to back,
/// the receiver reads them, for about `seconds`. Returns GB/s.
/// kIOError if a socket call fails.
Result<double> MeasureTcpStream(uint64_t bytes, double seconds);

/// Ping-pong of `bytes` each way; returns the median round trip in
/// microseconds. kIOError if a socket call fails.
Result<double> MeasureTcpRoundTrip(uint64_t bytes, double seconds);

/// memcpy of `bytes` between two buffers, repeated for about `seconds`.
/// Returns GB/s (bytes copied per second).
double MeasureMemcpy(uint64_t bytes, double seconds);

}  // namespace pstrain::bench
