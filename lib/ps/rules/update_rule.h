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
//       bound (ps/engine/ssp_gate.h).
// The rules act on the ParameterServer, which keeps the state; the Engine
// asks the WriteFence before it lets a rule step. Not thread-safe.
//
// A rule's properties as values, for the code that has no rule to ask, are
// its RuleTraits (ps/job/rule_traits.h): MakeUpdateRule(spec, ...)'s rule
// answers RuleTraitsOf(spec) to traits().

#include <cstdint>
#include <memory>

#include "ps/job/job_spec.h"
#include "ps/job/rule_traits.h"
#include "ps/store/parameter_server.h"
#include "util/result.h"

namespace pstrain::ps {

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

/// The rule of `spec.mode` (and --backup_workers, --step_timeout) over
/// `server`, which must outlive it.
std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server);

/// Each rule, in the rule's own file, with its RuleTraitsOf(spec).
std::unique_ptr<UpdateRule> MakeStreamingSync(ParameterServer* server,
                                              const RuleTraits& traits);
std::unique_ptr<UpdateRule> MakeBufferedSync(ParameterServer* server,
                                             const RuleTraits& traits);
std::unique_ptr<UpdateRule> MakeAsyncUpdate(ParameterServer* server,
                                            const RuleTraits& traits);
std::unique_ptr<UpdateRule> MakeSspUpdate(ParameterServer* server,
                                          const RuleTraits& traits);

}  // namespace pstrain::ps
