#pragma once
// UpdateRule: how one mode turns pushes into steps (share/doc/design.md,
// "Update rules"), the part of the conversation that differs between modes:
//   streaming sync (streaming_sync.cc): every piece of a push is added into
//       the step's sums as it arrives, and the last push closes the step;
//   buffered sync (buffered_sync.cc, --backup_workers, --step_timeout):
//       pushes land whole in per-worker buffers, and a step closes with the
//       first num_workers - b of them or when its time is up;
//   async (async_update.cc): each push steps at once, and its reply is the
//       parameters as they are then;
//   ssp (ssp_update.cc): as async, and replies also wait for the staleness
//       bound (ps/ssp_gate.h).
// The rules act on the ParameterServer, which keeps the state; the Engine
// asks the WriteFence before it lets a rule step. Not thread-safe.
//
// RuleTraits are a rule's properties as values, for the code that has no
// rule to ask (the ParameterServer, the lr schedule, the Observer, the
// worker's trainer): RuleTraitsOf(spec) is what MakeUpdateRule(spec, ...)'s
// rule answers to traits(). Nothing outside the rules and these two
// choosers looks at the job's mode.

#include <cstdint>
#include <memory>

#include "ps/job_spec.h"
#include "ps/parameter_server.h"
#include "util/result.h"

namespace pstrain::ps {

/// What a rule does, as plain values. A value type; copy freely.
struct RuleTraits {
  /// Each push steps the optimizer at once and makes a version: versions
  /// count the pushes of all workers, and each push has a staleness (the
  /// versions made since the one it was computed on). Otherwise a version
  /// is one step of all workers, and every server makes the same ones.
  bool applies_each_push = false;
  /// Pushes land whole in per-worker buffers (ParameterServer::grad_buffer)
  /// rather than being summed piece by piece as they are read.
  bool buffers_pushes = false;
  /// Steps wait for every member: finished and lost workers must leave the
  /// quorum, and a silent one (--dead_after) is lost.
  bool waits_for_every_member = false;
  /// The reply to a push_pull of version v waits for version v + 1, the
  /// step the push is part of; otherwise it is the parameters as they are.
  bool reply_awaits_step = false;
  /// Replies also wait until the worker is within the staleness bound.
  bool bounds_staleness = false;
  /// A worker back after it was lost, when it joins from the next version
  /// on (its step is under way), pulls that version first; otherwise
  /// whatever version is there.
  bool rejoin_awaits_next_version = false;
  /// Snapshots of several servers must hold one version on every server
  /// (the Observer skips one whose servers answer different versions).
  bool snapshot_versions_agree = false;
  /// How many versions ahead of the current one a snapshot of several
  /// servers is asked for, so that no server has passed it when asked.
  uint64_t snapshot_lead = 1;
  /// How long a step may wait after its first push, in seconds; 0: as long
  /// as it takes.
  double step_timeout = 0;
  /// What becomes of a push refused for a NaN or Inf: the end of the log
  /// line that says so. Static storage.
  const char* refused_push_outcome = "";
};

class UpdateRule {
 public:
  /// `traits`: what the rule is, returned by traits() and read by the
  /// non-virtual members below.
  explicit UpdateRule(const RuleTraits& traits) : traits_(traits) {}
  virtual ~UpdateRule() = default;
  UpdateRule(const UpdateRule&) = delete;
  UpdateRule& operator=(const UpdateRule&) = delete;

  /// Where bytes [offset, offset + bytes) of worker `w`'s gradient for key
  /// `key` land as they are read (bytes <= ParameterServer::kPieceBytes).
  virtual char* PieceBuffer(int w, int key, uint64_t offset) = 0;
  /// That piece is in and finite (its bytes at PieceBuffer). Allocates
  /// nothing.
  virtual void AddPiece(int w, int key, uint64_t offset, uint64_t bytes) = 0;
  /// Worker `w`'s whole compressed record of float32 key `key` is in and
  /// valid (wire::Validate): `nbytes` bytes at `data`, in `codec`. It is
  /// decoded into where the rule sums or keeps the worker's gradient.
  /// Allocates nothing.
  virtual void AddRecord(int w, int key, wire::Codec codec,
                         const wire::CodecParams& params, const uint8_t* data,
                         uint64_t nbytes) = 0;
  /// Worker `w`'s rows of row-sparse key `key` are in
  /// (ParameterServer::RowsBuffer) and finite; called once per key and
  /// push, for an empty set of rows too.
  virtual void AddRows(int /*w*/, int /*key*/) {}
  /// Worker `w`'s push of gradients computed on `version` is complete;
  /// `refused`: one of its pieces held NaN or Inf, and it must not change
  /// the parameters. Returns whether a new version exists.
  virtual Result<bool> Push(int w, uint64_t version, bool refused) = 0;

  const RuleTraits& traits() const { return traits_; }
  /// The version the reply to a push_pull of `version` waits for; 0: none.
  uint64_t ReplyVersion(uint64_t version) const {
    return traits_.reply_awaits_step ? version + 1 : 0;
  }
  /// The version a rejoining worker's first pull waits for, the server
  /// being at `version`; `joins_this_step`: ParameterServer::AddWorker's
  /// answer. 0: none.
  uint64_t RejoinPullVersion(uint64_t version, bool joins_this_step) const {
    return traits_.rejoin_awaits_next_version && !joins_this_step ? version + 1
                                                                  : 0;
  }
  /// Whether replies also wait for the SSP bound.
  bool bounds_staleness() const { return traits_.bounds_staleness; }
  /// Whether steps wait for every member (RuleTraits).
  bool has_quorum() const { return traits_.waits_for_every_member; }
  /// How long a step may wait after its first push, in seconds; 0: as long
  /// as it takes.
  double step_timeout() const { return traits_.step_timeout; }

 private:
  RuleTraits traits_;
};

/// The traits of the rule MakeUpdateRule(spec, ...) makes. Pure; cheap (no
/// allocation).
RuleTraits RuleTraitsOf(const JobSpec& spec);

/// The rule of `spec.mode` (and --backup_workers, --step_timeout) over
/// `server`, which must outlive it.
std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server);

/// Each rule's traits and the rule, in the rule's own file.
RuleTraits StreamingSyncTraits();
RuleTraits BufferedSyncTraits(double step_timeout);
RuleTraits AsyncTraits();
RuleTraits SspTraits();
std::unique_ptr<UpdateRule> MakeStreamingSync(ParameterServer* server);
std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server,
                                             double step_timeout);
std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server);
std::unique_ptr<UpdateRule> MakeSspUpdate(ParameterServer* server);

}  // namespace pstrain::ps
