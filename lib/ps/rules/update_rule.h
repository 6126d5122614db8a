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
// Each rule owns its step state (sums, who pushed, grad buffers, the async
// recipe, the staleness histogram, the applied pushes) and acts on the
// ParameterServer, the store, which keeps parameters and optimizers only.
// In a server only the StepDriver (ps/engine/step_driver.h) calls what
// changes it, after the WriteFence: the pushes, the closes, who leaves and
// joins the step's quorum. Not thread-safe.
//
// A rule's properties as values, for the code that has no rule to ask, are
// its RuleTraits (ps/job/rule_traits.h): MakeUpdateRule(spec, ...)'s rule
// answers RuleTraitsOf(spec) to traits().

#include <cstdint>
#include <memory>
#include <vector>

#include "ps/job/job_spec.h"
#include "ps/job/rule_traits.h"
#include "ps/rules/step_order.h"
#include "ps/store/parameter_server.h"
#include "util/result.h"
#include "wire/compression.h"

namespace pstrain::ps {

class UpdateRule {
 public:
  /// `traits`: what the rule is, returned by traits() and read by the
  /// non-virtual members below. `store` must outlive the rule.
  UpdateRule(const RuleTraits& traits, ParameterServer* store);
  virtual ~UpdateRule() = default;
  UpdateRule(const UpdateRule&) = delete;
  UpdateRule& operator=(const UpdateRule&) = delete;

  // Pushes, as they are read.

  /// Where bytes [offset, offset + bytes) of worker `w`'s gradient for key
  /// `key` land as they are read (bytes <= ParameterServer::kPieceBytes).
  virtual char* PieceBuffer(int w, int key, uint64_t offset) = 0;
  /// That piece is in and finite (its bytes at PieceBuffer). Allocates
  /// nothing. REQUIRES: CheckPush passed for this push; a whole piece:
  /// offset a multiple of kPieceBytes, bytes = min(kPieceBytes, rest of
  /// the key).
  virtual void AddPiece(int w, int key, uint64_t offset, uint64_t bytes) = 0;
  /// Whether AddPieceAt takes a raw piece from where it lies, so that
  /// nothing is copied into PieceBuffer first (a rule that sums pieces as
  /// they come; one that keeps the gradient needs it in its buffer).
  virtual bool AddsPiecesInPlace() const { return false; }
  /// As AddPiece, with the piece's bytes at `data` (at PieceBuffer, or in a
  /// shared-memory ring, at any alignment), not yet checked: each element
  /// is read once, checked for NaN and Inf in the pass that adds it, so a
  /// peer that writes the bytes meanwhile cannot slip a bad value past the
  /// check. Returns false when one was NaN or Inf: the piece's sum is
  /// then garbage, so the rule discards the step at once (DiscardStep).
  /// REQUIRES: AddsPiecesInPlace().
  [[nodiscard]] virtual bool AddPieceAt(int w, int key, uint64_t offset,
                                        const char* data, uint64_t bytes) {
    (void)w, (void)key, (void)offset, (void)data, (void)bytes;
    return false;
  }
  /// Worker `w`'s whole compressed record of float32 key `key` is in and
  /// valid (wire::Validate): `nbytes` bytes at `data`, in `codec`. It is
  /// decoded into where the rule sums or keeps the worker's gradient, with
  /// no decoded copy. Allocates nothing.
  virtual void AddRecord(int w, int key, wire::Codec codec,
                         const wire::CodecParams& params, const uint8_t* data,
                         uint64_t nbytes) = 0;
  /// Worker `w`'s rows of row-sparse key `key` are in
  /// (ParameterServer::RowsBuffer) and finite; called once per key and
  /// push, for an empty set of rows too.
  virtual void AddRows(int w, int key) = 0;
  /// Whether worker `w` may push gradients computed on `version` now.
  /// Sync (kInvalidArgument): a version other than the store's (buffered
  /// sync: a newer one), or a second push in one step. Async, ssp: always
  /// ok. REQUIRES: w is in the step's quorum (Membership).
  virtual Status CheckPush(int w, uint64_t version) const = 0;
  /// Worker `w`'s push of gradients computed on `version` is complete;
  /// `refused`: one of its pieces held NaN or Inf, and it must not change
  /// the parameters (refused_pushes() counts it). Returns whether a new
  /// version exists (sync: this push closed the step). Errors as
  /// CheckPush.
  Result<bool> Push(int w, uint64_t version, bool refused) {
    if (refused)
      ++refused_;
    return Apply(w, version, refused);
  }
  /// Buffered sync: closes the current step with the pushes in so far
  /// (--step_timeout); returns whether it stepped (false when no push is
  /// in). Other rules: false.
  virtual bool CloseStep() { return false; }

  // The step's quorum: only the StepDriver calls these.

  /// Worker `w` leaves the step's quorum (lost, or in sync done). Sync: a
  /// push it completed for this step still counts; otherwise the step
  /// stops waiting for it, and the pieces it already added stay in their
  /// sums (each element is then the mean of the gradients that reached
  /// it). Returns true when that closed the step. Async, ssp: false.
  virtual bool RemoveWorker(int w) = 0;
  /// Worker `w` is back. Returns true when it joins the current step (no
  /// push or piece of it is in yet); false when it joins from the next
  /// version on (sync), and always false in async and ssp.
  virtual bool AddWorker(int w) = 0;
  /// Sync: whether worker `w` has not pushed for the current version
  /// (whether it is in the quorum is Membership's). Others: false.
  virtual bool awaits_push(int /*w*/) const { return false; }
  /// Sync: pushes in for the current version. Others: 0.
  virtual int pushes_this_step() const { return 0; }
  /// Sync: the current step is to end without an optimizer step, because a
  /// push in it was refused (a NaN or Inf piece) after some of its pieces
  /// were added: a float sum cannot be taken apart exactly. The refused
  /// push still counts, so the step closes and the version advances with
  /// the parameters and optimizer state unchanged, the way torch.amp's
  /// GradScaler skips a step whose gradients are not finite. Others: no-op.
  virtual void DiscardStep() {}

  // Key by key (streaming sync; a no-op elsewhere).

  /// Sync with one optimizer (--server_threads 1): a closing step advances
  /// the version at once but leaves the optimizer to UpdateNextKey, key by
  /// key in step_order(), so that each key's parameters can be sent while
  /// the next is stepped. Anything that changes the sums or reads the
  /// parameters as a whole first steps what is left (UpdateAllKeys).
  virtual void set_step_by_key(bool /*on*/) {}
  /// Steps the next key of the closed step; returns it, or -1 when none is
  /// left.
  virtual int UpdateNextKey() { return -1; }
  void UpdateAllKeys() {
    while (UpdateNextKey() >= 0) {
    }
  }
  /// The order keys are stepped and sent in (ps/rules/step_order.h).
  virtual const StepOrder& step_order() const = 0;
  /// Before a step's first piece: its keys go in `keys`' order (a
  /// permutation of the keys; false and no change otherwise).
  virtual bool set_step_order(const std::vector<int>& /*keys*/) {
    return false;
  }
  /// Every key holds the store's version: none updated ahead, none waiting.
  virtual bool version_complete() const { return true; }
  /// Whether keys may be stepped before their step closes (UpdateAhead):
  /// streaming sync stepped by key with one optimizer, no --clip_grad_norm
  /// (it needs every key's gradient) and no row-sparse keys.
  virtual bool updates_ahead() const { return false; }
  /// Whether key `key` of the step under way may be updated ahead of its
  /// close: every member's pieces of it are in (its sums are final), it is
  /// not stepped yet, the previous step is whole, and no push of this step
  /// was refused. REQUIRES: updates_ahead().
  virtual bool ReadyAhead(int /*key*/) const { return false; }
  /// Steps key `key` ahead of its step's close. The version advances only
  /// at the close; the key then holds the next one's value
  /// (step_order().stepped(key)). Bit for bit what the step computes at
  /// its close: libtorch's optimizers are elementwise, and the lr is the
  /// version's. REQUIRES: ReadyAhead(key).
  virtual void UpdateAhead(int /*key*/) {}

  // Replies.

  /// The Engine is sending worker `w` the parameters as they are now. With
  /// --delay_compensation, its next push's gradient is corrected against
  /// them (ps/rules/delay_compensation.h); with lookahead (UsesLookahead),
  /// SentParam(w, k) becomes where momentum will carry them
  /// (ps/rules/lookahead.h); else a no-op.
  virtual void NoteParamsSent(int /*w*/) {}
  /// Key `key` as worker `w` is to be sent it: the store's parameters, or
  /// under lookahead (UsesLookahead) the copy NoteParamsSent made. Valid
  /// until w's next NoteParamsSent.
  virtual const at::Tensor& SentParam(int /*w*/, int key) const {
    return store_->params()[key];
  }

  // What it counted.

  /// Pushes refused for a NaN or Inf so far (Push).
  uint64_t refused_pushes() const { return refused_; }
  /// Buffered sync: late pushes dropped so far. Others: 0.
  virtual uint64_t dropped_pushes() const { return 0; }
  /// Sync steps that ended without an optimizer step (DiscardStep).
  virtual uint64_t discarded_steps() const { return 0; }
  /// Async, ssp: how many pushes had each staleness (index: versions
  /// behind; the last bucket, kMaxStaleness, counts kMaxStaleness or
  /// more). Sync: empty.
  static constexpr size_t kMaxStaleness = 64;
  virtual std::vector<uint64_t> staleness_histogram() const { return {}; }
  /// By worker, the version the last push applied from it was computed on,
  /// or -1 (a worker's pushes name growing versions, so a push naming one
  /// of these or less was applied already: a standby that took the shard
  /// over drops it, ps/rank/standby.h). Sync: all -1.
  const std::vector<int64_t>& applied() const { return applied_; }
  /// A standby's copy of its primary's applied(). kInvalidArgument unless
  /// one per worker.
  Status set_applied(std::vector<int64_t> applied);
  /// Bytes the --delay_compensation state holds per worker (0: off).
  virtual uint64_t delay_compensation_bytes_per_worker() const { return 0; }

  const RuleTraits& traits() const { return traits_; }
  /// The version the reply to a push_pull of `version` waits for; 0: none.
  uint64_t ReplyVersion(uint64_t version) const {
    return traits_.reply_awaits_step ? version + 1 : 0;
  }
  /// The version a rejoining worker's first pull waits for, the server
  /// being at `version`; `joins_this_step`: AddWorker's
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

 protected:
  // Push's work: what becomes of the push is the rule's.
  virtual Result<bool> Apply(int w, uint64_t version, bool refused) = 0;
  ParameterServer* store() const { return store_; }
  // Worker w's push computed on `version` was applied (applies_each_push).
  void NoteApplied(int w, uint64_t version) {
    applied_[w] = static_cast<int64_t>(version);
  }

 private:
  RuleTraits traits_;
  ParameterServer* store_;
  std::vector<int64_t> applied_;
  uint64_t refused_ = 0;
};

/// The rule of `spec.mode` (and --backup_workers, --step_timeout) over
/// `server`, which must outlive it.
std::unique_ptr<UpdateRule> MakeUpdateRule(const JobSpec& spec,
                                           ParameterServer* server);

/// Each rule over `server`, in the rule's own file.
std::unique_ptr<UpdateRule> MakeStreamingSync(const JobSpec& spec,
                                              ParameterServer* server);
std::unique_ptr<UpdateRule> MakeBufferedSync(const JobSpec& spec,
                                             ParameterServer* server);
std::unique_ptr<UpdateRule> MakeAsyncUpdate(const JobSpec& spec,
                                            ParameterServer* server);
std::unique_ptr<UpdateRule> MakeSspUpdate(const JobSpec& spec,
                                          ParameterServer* server);

}  // namespace pstrain::ps
