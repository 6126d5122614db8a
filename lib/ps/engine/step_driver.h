#pragma once
// StepDriver: the one path by which the update rule (ps/rules/update_rule.h)
// and the store (ps/store/parameter_server.h) change, the way every change
// to a leveldb database goes through VersionSet::LogAndApply. Every push
// read and applied, step closed (by its last push, a worker leaving the
// quorum or --step_timeout), worker removed or rejoined, and key updated
// goes through it, after the rules that guard them:
//   - the WriteFence (write_fence.h): nothing changes the parameters while
//     they are on the wire; the work waits and is handed back in order;
//   - the StepDeadline (step_deadline.h): --step_timeout;
//   - KeyUpdates (key_updates.h): a version's keys updated one at a time,
//     after the close or ahead of it;
//   - the stop (--target_accuracy): pushes answered, not applied.
// Its other part is the PushReader (push_reader.h), which reads a push's
// pieces into the rule. It tells the Engine what happened (a step closed,
// a version complete) by its return values and calls no other part.
//
// Words: a push is *applied* to the step; the last push (or the deadline)
// *closes* the step, which makes a new *version*; each key is *updated*
// (its optimizer's step), at the close, after it, or ahead of it; a version
// is *complete* once every key holds it.
//
// Threading: not thread-safe; the Engine's thread only. The pointers given
// must outlive it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/outbox.h"
#include "ps/engine/read_plan.h"
#include "util/result.h"
#include "wire/frame.h"

namespace pstrain::net {
class SendGate;
}

namespace pstrain::wire {
struct TensorDesc;
}

namespace pstrain::ps {

struct JobSpec;
class ParameterServer;
class UpdateRule;
struct KeyFormats;
class Membership;
class PeerWatch;
class KeyUpdates;
class PushReader;
class StepDeadline;
class WriteFence;
struct FenceWork;
struct WorkerPeer;

class StepDriver {
 public:
  /// What leaving the quorum or a step's deadline did.
  enum class Outcome {
    kHeld,    // parameters are on the wire: the fence keeps it for later
    kClosed,  // it closed the step: a new version exists
    kNone,    // nothing changed
  };

  /// `*watch` hears of progress (a push applied where steps wait for no
  /// quorum).
  StepDriver(const JobSpec& spec, ParameterServer* server, KeyFormats* formats,
             Membership* members, PeerWatch* watch, Outbox* outbox);
  ~StepDriver();
  StepDriver(const StepDriver&) = delete;
  StepDriver& operator=(const StepDriver&) = delete;

  /// The rule, to read: its order, traits, counts and what it sends.
  const UpdateRule& rule() const { return *rule_; }
  /// Training has stopped (Stop): pushes are answered, not applied.
  bool stopped() const { return stopped_; }
  /// Keys of the step under way are updated ahead of its close.
  bool ahead() const;
  /// Every key of the current version is updated, and none is under way.
  bool complete() const;
  /// What replies of parameters wait on (KeyUpdates).
  net::SendGate* gate() const;
  /// Steps closed by --step_timeout so far.
  uint64_t timed_out_steps() const;

  // The push path: planned before a byte is read, read a piece at a time,
  // applied once whole.

  /// Checks `peer`'s push (or push_pull: `type`) from its `meta` and plans
  /// where its data bytes go. kInvalidArgument or kCorruption naming what
  /// is wrong; nothing of it is applied then.
  Status PlanPush(WorkerPeer& peer, wire::MsgType type, std::string_view meta,
                  ReadPlan* plan);
  /// Piece `index` of `peer`'s push is in (PushReader::Read): returns the
  /// dense key it completed or added to, or -1. Nothing once Drops.
  int ReadPiece(WorkerPeer& peer, size_t index);
  /// Whether the rest of `peer`'s push is dropped unread: a piece of it
  /// was refused, or it is a duplicate (--replicas).
  bool Drops(const WorkerPeer& peer) const;
  /// Whether piece `index` may be read where it lies (PushReader::ReadsAt).
  bool ReadsAt(const WorkerPeer& peer, size_t index) const;
  /// As ReadPiece, from `data` (PushReader::ReadAt). REQUIRES: !Drops.
  int ReadPieceAt(WorkerPeer& peer, size_t index, const uint8_t* data);
  /// --placement server: whether worker `w` may send a batch now (its
  /// gradients will be a push of the current version); the version is
  /// made whole first.
  Status CheckBatch(int w);
  /// --placement server: a batch's gradients `keys` (float32, one per key,
  /// key order) as `peer`'s push, refused at the first NaN or Inf.
  void AddBatch(WorkerPeer& peer, const std::vector<at::Tensor>& keys);
  /// Whether `work` must wait for the parameters on the wire (then the
  /// fence keeps it: TakeWaiting).
  bool Holds(const FenceWork& work);
  /// Applies `peer`'s whole push of gradients computed on `version`.
  /// Returns whether it closed the step; false once stopped(). Errors:
  /// the worker is no member, or the rule refuses it (UpdateRule::Push).
  Result<bool> Apply(WorkerPeer& peer, uint64_t version, Time now);

  // The quorum and the deadline.

  /// Worker `w` leaves the step's quorum (lost, or in sync done).
  Outcome RemoveWorker(int w);
  /// Lost worker `w` is back: returns whether it joins the current step.
  /// kUnavailable while its removal waits on the fence.
  Result<bool> Rejoin(int w);
  /// The version whose --step_timeout has passed at `now`, if any.
  std::optional<uint64_t> TimedOut(Time now) const;
  /// Closes step `version` with the pushes it has (--step_timeout).
  Outcome CloseTimedOut(uint64_t version);

  // Versions, key by key (KeyUpdates).

  /// A step closed. Returns whether it was updated ahead.
  bool CloseVersion();
  /// Keys of the closed step are still to be updated.
  bool updating() const;
  /// See KeyUpdates::OpenAfterAhead.
  void OpenAfterAhead();
  /// Updates the next key; true once the version is complete.
  bool UpdateNextKey();
  /// Continue came for the next key (KeyUpdates::TakePosted).
  bool TakePosted();
  /// Whether key `key` may be updated ahead now (not once stopped()).
  bool MayUpdateAhead(int key) const;
  /// See KeyUpdates::StartAhead.
  bool StartAhead();
  /// See KeyUpdates::UpdateAhead.
  void UpdateAhead(int key);
  /// Updates every key still to be updated: before anything that reads
  /// the parameters as a whole (a rows reply, a batch, a save).
  void UpdateAllKeys();

  // Replies, and the run's end.

  /// Worker `w` is being sent the parameters (UpdateRule::NoteParamsSent).
  void NoteSent(int w);
  /// A params frame to `peer` is on its way (WriteFence::Sent).
  void Sent(PeerId peer);
  /// One of `peer`'s params frames has left; returns whether work waits.
  bool Written(PeerId peer);
  /// `peer` closed; returns whether work waits now.
  bool Closed(PeerId peer);
  /// Whether no params frame is on the wire.
  bool fence_open() const;
  /// The work the fence kept (WriteFence::TakeWaiting).
  const std::vector<FenceWork>& TakeWaiting();
  /// Stops training (--target_accuracy). Returns whether replies are to
  /// be released now; while keys are updated ahead, the stop waits for
  /// the step's close (CloseVersion).
  bool Stop();
  /// A standby's copy of its primary's applied pushes (set before Start):
  /// UpdateRule::set_applied.
  Status set_applied(std::vector<int64_t> applied);

 private:
  void ArmStepTimeout(Time now);
  void LogRefusal(const WorkerPeer& peer, uint64_t version);
  void OrderKeys(const std::vector<wire::TensorDesc>& grads);
  int Traced(const WorkerPeer& peer, size_t index, int key) const;

  const JobSpec& spec_;
  ParameterServer* server_;
  KeyFormats* formats_;
  Membership* members_;
  PeerWatch* watch_;
  Outbox* outbox_;
  std::unique_ptr<UpdateRule> rule_;
  std::unique_ptr<WriteFence> fence_;
  std::unique_ptr<StepDeadline> deadline_;
  std::unique_ptr<PushReader> reader_;
  std::unique_ptr<KeyUpdates> keys_;
  bool stopped_ = false;
  bool stop_after_ = false;  // Stop came while ahead
};

}  // namespace pstrain::ps
