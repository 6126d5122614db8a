#pragma once
// Periodic checkpoints of a serving process (`serve --checkpoint_every`,
// `--keep`, `--resume auto`). Each one is the usual checkpoint triple
// (checkpoint.h: model .pt, .json, .optim.pt, each written atomically) at a
// versioned path beside --checkpoint: "model.pt" -> "model-v000000120.pt".
// A checkpoint is complete when all three files are there (each appears
// whole or not at all, by rename) and its .json names its version; a
// process killed during a save leaves at most an incomplete newest one,
// which --resume auto passes over. Thread-compatible.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"
#include "util/status.h"

namespace pstrain::ps {

struct CheckpointEvery {
  uint64_t steps = 0;                 // every this many versions; 0: never
  std::chrono::milliseconds time{0};  // or after this long; 0: never
};

/// Parses --checkpoint_every: "N" (versions, N >= 1) or "Ns" (seconds,
/// N > 0, may be fractional). kInvalidArgument "--checkpoint_every 'x':
/// expected N (steps) or Ns (seconds)".
Result<CheckpointEvery> ParseCheckpointEvery(const std::string& text);

/// "dir/model.pt", 120 -> "dir/model-v000000120.pt" (".pt"/".pth" kept;
/// without one, ".pt" is appended).
std::string VersionedCheckpointPath(const std::string& base, uint64_t version);

/// The complete versioned checkpoints of `base`, oldest first.
std::vector<std::pair<uint64_t, std::string>> CompleteCheckpoints(const std::string& base);

/// Decides when the next periodic save is due and removes old ones.
class CheckpointRotation {
 public:
  /// `keep` >= 1: how many complete versioned checkpoints stay.
  CheckpointRotation(std::string base, CheckpointEvery every, int keep);

  /// Whether a save is due at `version` (called after each new version).
  bool Due(uint64_t version, std::chrono::steady_clock::time_point now) const;
  /// Records a save of `version` at `now`, then deletes all but the newest
  /// `keep` complete checkpoints (an incomplete one left by a kill stays,
  /// and is never chosen by --resume auto).
  /// kIOError naming a file that cannot be removed.
  Status Saved(uint64_t version, std::chrono::steady_clock::time_point now);

  std::string PathFor(uint64_t version) const {
    return VersionedCheckpointPath(base_, version);
  }

 private:
  std::string base_;
  CheckpointEvery every_;
  int keep_;
  uint64_t last_version_ = 0;
  std::chrono::steady_clock::time_point last_time_ = std::chrono::steady_clock::now();
};

}  // namespace pstrain::ps
