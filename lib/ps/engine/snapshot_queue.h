#pragma once
// SnapshotQueue: the snapshots asked for and not yet taken (by rank 0's
// observer through a tool peer, or by rank 0's own code for evaluation and
// checkpoints), each waiting for a version. The Engine takes one copy of
// the parameters for every request due once a version is whole, and
// abandons the rest when the run ends.
//
// Threading: not thread-safe; the Engine's thread only.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ps/store/snapshot.h"

namespace pstrain::ps {

class SnapshotQueue {
 public:
  /// Gets the snapshot, or nullptr when none will be taken.
  using Done = std::function<void(std::shared_ptr<const Snapshot>)>;
  struct Request {
    uint64_t min_version;
    bool with_optimizer_state;
    Done done;
    /// A standby's: the record of the step that made the version
    /// (TakeStepRecord) does, when the version is taken as it is made.
    bool replay = false;
  };
  /// The requests due at a version, in the order they came.
  struct Due {
    std::vector<Request> requests;
    bool with_optimizer_state = false;  // any of them asks for it
  };

  /// A snapshot at the first whole version >= `min_version` (`replay`: or
  /// the record of the step that made it, see Request).
  void Add(uint64_t min_version, bool with_optimizer_state, Done done,
           bool replay = false);
  /// No request waits.
  bool empty() const { return requests_.empty(); }
  /// Takes the requests due at `version` (min_version <= version); the
  /// others keep waiting, in order.
  Due TakeDue(uint64_t version);
  /// Takes every request still waiting (the run ends).
  std::vector<Request> TakeAll();

 private:
  std::vector<Request> requests_;
};

}  // namespace pstrain::ps
