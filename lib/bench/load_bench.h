#pragma once
// `pstrain bench load`: many worker connections pushing gradients as fast
// as they can, in async mode, against one real server on loopback, for a
// fixed time. Proves that nothing is lost or applied twice under load (the
// server's applied pushes and version equal the sum of acknowledged pushes)
// and that the server's memory stays bounded (peak RSS after the first
// quarter of the run against the peak at the end). Server and workers are
// threads of this process, one connection and thread per worker.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace pstrain::bench {

struct LoadBenchOptions {
  /// Worker connections. Default: 64.
  int connections = 64;
  /// Bytes of gradient per push (one float32 key). Default: 1 MiB.
  uint64_t bytes = 1 << 20;
  /// How long every connection keeps pushing, in seconds. Default: 60.
  double seconds = 60;
};

struct LoadBenchReport {
  int connections = 0;
  uint64_t bytes = 0;
  double seconds = 0;              // measured, first push to last ack
  uint64_t acked_pushes = 0;       // sum over the connections
  uint64_t applied_pushes = 0;     // ParameterServer::pushes()
  uint64_t server_version = 0;     // async: one version per push
  uint64_t refused_pushes = 0;     // Service Stats
  uint64_t rss_after_quarter = 0;  // peak RSS (bytes) a quarter in
  uint64_t peak_rss = 0;           // peak RSS (bytes) at the end
  /// acked == applied == version and nothing refused.
  bool exact() const {
    return acked_pushes == applied_pushes && applied_pushes == server_version &&
           refused_pushes == 0;
  }
};

/// {"connections", "bytes", "seconds", "acked_pushes", "applied_pushes",
///  "server_version", "refused_pushes", "exact", "pushes_per_second",
///  "gbps" (1e9 bytes/s pushed), "rss_after_quarter_bytes", "peak_rss_bytes"}.
nlohmann::json ToJson(const LoadBenchReport& report);

/// Runs the load. kInvalidArgument for connections < 1, bytes < 4 or
/// seconds <= 0; a worker's or the server's error otherwise.
Result<LoadBenchReport> RunLoadBench(const LoadBenchOptions& options);

}  // namespace pstrain::bench
