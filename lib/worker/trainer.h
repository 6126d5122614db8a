#pragma once
// The worker's training loop: connect to the master, take the job spec,
// build the model, pull, then per step forward/backward on this worker's
// shard and one push-pull round trip, which overlaps backward (gradients
// leave as they are made) and the next forward (parameters arrive layer by
// layer); finally report stats and exit. One call per process; not
// thread-safe.

#include <chrono>
#include <string>

#include "report/event_log.h"
#include "util/status.h"

namespace pstrain::worker {

struct TrainerOptions {
  std::string master_addr = "localhost";
  int master_port = 29500;
  int rank = 1;
  int world_size = 2;
  /// Directory of the data set's IDX files; "" = Debian's place for it.
  std::string data_dir;
  /// "cpu" or "cuda" (where this libtorch has CUDA and a GPU is visible).
  std::string device = "cpu";
  /// Longest wait for the server, for connecting and for each reply.
  std::chrono::milliseconds timeout{120000};
  uint64_t max_frame_bytes = uint64_t{1} << 32;
  /// The --auth_token_file token; "" (the default): none.
  std::string auth_token;
  /// For tests of the fingerprint check only: build this model instead of
  /// the job's. Default: "" (the job's).
  std::string model_override;
  /// For tests and benchmarks of stragglers only: sleep this long in every
  /// step's compute. Default: 0.
  std::chrono::milliseconds step_delay{0};
  /// How long to keep reconnecting to a server whose connection was lost
  /// (backoff 0.1 s doubling to 5 s); 0: fail at once. Default: 60 s.
  std::chrono::milliseconds reconnect_timeout{60000};
};

/// Trains until the job's epochs or max_steps are done. Returns
/// kInvalidArgument / kNotFound / kIncompatible for bad usage or input
/// (a bad flag, missing data, a refused handshake or model), kTimeout or
/// kUnavailable when the server is gone or silent, with a one-line message.
/// `*log` receives step, epoch and summary events.
Status RunWorker(const TrainerOptions& options, report::EventLog* log);

}  // namespace pstrain::worker
