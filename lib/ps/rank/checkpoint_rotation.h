#pragma once
// Periodic checkpoints of a job (`serve --checkpoint_every`, `--keep`,
// `--resume auto`). Each one is a whole checkpoint (checkpoint.h:
// SaveJobCheckpoint: every server's optimizer state, the model .pt, then the
// .json) at a versioned path beside --checkpoint: "model.pt" ->
// "model-v000000120.pt". A checkpoint is complete when its .json names its
// version and every part it lists is there (each appears whole or not at
// all, by rename); a process killed during a save leaves at most an
// incomplete newest one, which --resume auto passes over. Thread-compatible.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/status.h"

namespace pstrain::ps {

/// "dir/model.pt", 120 -> "dir/model-v000000120.pt" (".pt"/".pth" kept;
/// without one, ".pt" is appended).
std::string VersionedCheckpointPath(const std::string& base, uint64_t version);

/// The complete versioned checkpoints of `base`, oldest first.
std::vector<std::pair<uint64_t, std::string>> CompleteCheckpoints(
    const std::string& base);

/// Deletes all but the newest `keep` (>= 1) complete versioned checkpoints
/// of `base`, every part of each; an incomplete one left by a kill stays,
/// and is never chosen by --resume auto. kIOError naming a file that cannot
/// be removed.
Status RemoveOldCheckpoints(const std::string& base, int keep);

}  // namespace pstrain::ps
