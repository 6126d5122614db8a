#pragma once
// SnapshotDesk: copies of this server's parameters at a version, for rank
// 0's observer (a tool peer, or rank 0's own code) and for standbys
// (--replicas), copied the moment the version is complete, so that scoring
// and saving them never hold a step up. It owns
//   - the SnapshotQueue (snapshot_queue.h): requests waiting for a version;
//   - the StandbyAcks (standby_acks.h): the versions this shard's standbys
//     hold; a reply of a version they do not hold yet waits (replicated());
//   - the StepRecords (step_records.h): a standby that holds the version
//     before gets the step's record instead (replication after
//     aggregation), taken as the version is made, before the next step's
//     pushes land in its gradients.
// It reads the store and the rule's applied pushes, and changes neither.
//
// Threading: not thread-safe; the Engine's thread only. The pointers given
// must outlive it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "ps/engine/outbox.h"
#include "util/result.h"
#include "wire/messages.h"

namespace pstrain::ps {

class ParameterServer;
class StepDriver;
class PeerTable;
struct Peer;
struct Snapshot;
class SnapshotQueue;
class StandbyAcks;
class StepRecords;

class SnapshotDesk {
 public:
  /// Gets the snapshot, or nullptr (SnapshotQueue::Done).
  using Done = std::function<void(std::shared_ptr<const Snapshot>)>;

  SnapshotDesk(const ParameterServer* server, const StepDriver* steps,
               PeerTable* peers, Outbox* outbox);
  ~SnapshotDesk();
  SnapshotDesk(const SnapshotDesk&) = delete;
  SnapshotDesk& operator=(const SnapshotDesk&) = delete;

  /// Called with each version once it is complete (e.g. to evaluate).
  void set_on_version(std::function<void(uint64_t)> fn) {
    on_version_ = std::move(fn);
  }
  /// The parameters (and, `with_optimizer_state`, the optimizer state) at
  /// the first version >= `min_version` once it is complete, or at once
  /// when it is there and complete (StepDriver::complete); `done` gets
  /// nullptr when the run ends first (`stopping`: it has). `replay` (a
  /// standby's): the record of the step that made the version does, when
  /// one was taken.
  void Request(uint64_t min_version, bool with_optimizer_state, Done done,
               bool replay, bool stopping, Time now);
  /// A snapshot frame from `peer` (a tool): its message. A standby's
  /// records the version it holds, so that replies of it may leave.
  /// kInvalidArgument from a worker or server; the meta's errors.
  Result<wire::Snapshot> Ask(Peer& peer, std::string_view meta, bool stopping);
  /// Answers `msg` from `peer` with a shard frame (or a step record),
  /// answering `id`, once its version is complete.
  void Serve(Peer& peer, uint64_t id, const wire::Snapshot& msg, bool stopping,
             Time now);
  /// The current version is complete: due requests are answered, a step
  /// record is kept for the standbys, and on_version is called.
  void Complete(Time now);
  /// The run ends: no version will be made for the requests still waiting.
  void Abandon();
  /// Tool `peer` closed: returns whether it was a standby of this shard,
  /// unless `stopping` (then replies that waited for its copy need not).
  bool Drop(PeerId peer, bool stopping);
  /// Every tick (`dead_after`: --dead_after, seconds; <= 0: never): a
  /// standby that lacks a version made longer than that before `now`, and
  /// has sent nothing for as long, is closed (then Drop), without an error
  /// frame: it copies again if it runs again.
  void DropLate(Time now, double dead_after);
  /// Every version a reply would carry is held by this shard's standbys.
  bool replicated() const;
  /// Bytes sent to the standbys so far.
  uint64_t standby_bytes() const;

 private:
  void TakeDue(bool just_made, Time now);
  void Reply(PeerId to, uint64_t id, bool with_optimizer_state, bool standby,
             std::shared_ptr<const Snapshot> snapshot);

  const ParameterServer* server_;
  const StepDriver* steps_;
  PeerTable* peers_;
  Outbox* outbox_;
  std::unique_ptr<SnapshotQueue> queue_;
  std::unique_ptr<StandbyAcks> acks_;     // --replicas: this shard's standbys
  std::unique_ptr<StepRecords> records_;  // the steps they have yet to replay
  std::function<void(uint64_t)> on_version_;
};

}  // namespace pstrain::ps
