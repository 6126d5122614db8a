#pragma once
// Snapshot: a server's parameters (its keys or slices) at one version,
// copied when that version is made, so that evaluation and checkpoints can
// read them on threads of their own while training changes the originals.
// share/doc/design.md: "Evaluation scores a snapshot of one version on
// threads of its own; it never stalls a step". A value type; immutable once
// taken.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "util/result.h"

namespace pstrain::ps {

class ParameterServer;

struct Snapshot {
  uint64_t version = 0;
  /// Copies of ParameterServer::params() (key order, contiguous, CPU).
  std::vector<at::Tensor> params;
  /// SerializeOptimizerState of the server's optimizers (checkpoint.h);
  /// empty unless asked for.
  std::string optimizer_state;
  /// UpdateRule::applied(): what a standby needs to drop the pushes it has
  /// the effect of already.
  std::vector<int64_t> applied;
  /// When the version was made (taken).
  std::chrono::steady_clock::time_point made_at;
};

/// Copies `server`'s parameters now (about 1 ms per 5 MB) and, when asked,
/// serializes its optimizer state; `applied` (by worker) is the rule's, and
/// `now` becomes made_at. REQUIRES: every key holds the current version
/// (UpdateRule::version_whole()). kIOError when the optimizer state cannot
/// be serialized.
Result<std::shared_ptr<const Snapshot>> TakeSnapshot(
    const ParameterServer& server, std::vector<int64_t> applied,
    bool with_optimizer_state, std::chrono::steady_clock::time_point now);

}  // namespace pstrain::ps
