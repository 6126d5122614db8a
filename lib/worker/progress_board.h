#pragma once
// ProgressBoard: a worker's running figures, written by the training thread
// after each step and read by the heartbeat thread, which carries them to
// rank 0 as a compact JSON object (wire::Heartbeat::json) for its live
// view. Thread-safe: Publish and Json may run on any threads at once.

#include <cstdint>
#include <mutex>
#include <string>

#include "worker/progress.h"

namespace pstrain::worker {

/// A worker's figures as of its last finished step.
struct ProgressFigures {
  int64_t steps = 0;
  int64_t samples = 0;
  double loss = 0;                   // the last step's (NaN: JSON null)
  double compute_seconds = 0;        // so far
  double communication_seconds = 0;  // so far, waited on the servers
  uint64_t bytes_pushed = 0;         // to all servers, so far
  uint64_t bytes_pulled = 0;
  uint64_t version = 0;           // the server's version the last reply named
  double samples_per_second = 0;  // since training began
};

/// `f` as one compact JSON object, keys in the order of the struct:
/// {"steps":3,"samples":192,"loss":0.5,"compute_seconds":0.25,
/// "communication_seconds":0.125,"bytes_pushed":1024,"bytes_pulled":2048,
/// "version":3,"samples_per_second":512.0}. A figure that is not finite
/// is null.
std::string ProgressJson(const ProgressFigures& f);

/// The figures of `p` after a step whose loss was `loss`; `version` and the
/// bytes are the ServerGroup's.
ProgressFigures FiguresOf(const Progress& p, double loss, uint64_t version,
                          uint64_t bytes_pushed, uint64_t bytes_pulled);

class ProgressBoard {
 public:
  ProgressBoard() = default;
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  /// Replaces the figures. Allocates nothing.
  void Publish(const ProgressFigures& figures);
  /// ProgressJson of the last figures published, or "" before the first.
  std::string Json() const;

 private:
  mutable std::mutex mu_;
  ProgressFigures figures_;
  bool published_ = false;
};

}  // namespace pstrain::worker
