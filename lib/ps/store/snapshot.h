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
  /// Copies of ParameterServer::params() (key order, contiguous, CPU); in
  /// a step record, the step's values instead (ParameterServer::Replay's).
  std::vector<at::Tensor> params;
  /// A step record (TakeStepRecord): the step that made `version`, to
  /// replay at `lr` on the version before it.
  bool step_record = false;
  double lr = 0;
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
/// (UpdateRule::version_complete()). kIOError when the optimizer state cannot
/// be serialized.
Result<std::shared_ptr<const Snapshot>> TakeSnapshot(
    const ParameterServer& server, std::vector<int64_t> applied,
    bool with_optimizer_state, std::chrono::steady_clock::time_point now);

/// The record of the step that made `server`'s current version, for a
/// standby that holds the version before it to replay
/// (ParameterServer::Replay): each dense key's gradient as it stepped
/// (set, corrected and clipped by the rule) and each buffer's values,
/// copied (about 1 ms per 5 MB). Taken at once when the version is made,
/// before a push of the next step lands in those gradients. nullptr when
/// the version cannot be replayed: Step did not make it (a step taken key
/// by key, or skipped), the server has row-sparse keys, or a dense key
/// has no gradient.
std::shared_ptr<const Snapshot> TakeStepRecord(
    const ParameterServer& server, std::vector<int64_t> applied,
    std::chrono::steady_clock::time_point now);

}  // namespace pstrain::ps
