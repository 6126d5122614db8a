#pragma once
// ReplyDesk: the one builder of a worker's replies of parameters: a pull's,
// a push_pull's (its dense keys, or the rows it asked for), and under
// --placement server a batch's batch_done. It owns what a reply waits on
// and what it is built in:
//   - the held replies, by worker: a pull (or the pull half of a push_pull)
//     that waits for a version, for the standbys' copy of it, or for SSP's
//     bound, kept as values the way ps-lite keeps a request's meta to
//     answer later;
//   - the SspGate (ssp_gate.h), the workers' clocks;
//   - the reply scratch: the params message, each worker's rows reply
//     (kept until written), and the frame.
// It decides when a held reply is due and builds it; the Engine has the
// StepDriver note what is sent first (StepDriver::NoteSent, ::Sent), since
// a reply is what the rule and the fence must know of. It reads the
// StepDriver (the rule, the gate, whether keys are updated ahead) and the
// store, and changes neither.
//
// Threading: not thread-safe; the Engine's thread only. The pointers given
// must outlive it.

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/outbox.h"
#include "ps/engine/ssp_gate.h"
#include "util/result.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct JobSpec;
class ParameterServer;
struct KeyFormats;
class Membership;
class StepDriver;
struct WorkerPeer;

/// What the ReplyDesk decided for a request.
enum class ReplyAnswer : uint8_t {
  kNone,   // answered already (an ack), or its reply went ahead
  kNow,    // send the current version now
  kAhead,  // send the next version now, each key as it is updated
  kHeld,   // held until TakeDue returns it
};

class ReplyDesk {
 public:
  /// A reply due now: to `peer`, answering `id`; `ahead`: of the next
  /// version, whose keys are being updated ahead of its close.
  struct Due {
    WorkerPeer* peer;
    uint64_t id;
    bool ahead;
  };

  ReplyDesk(const JobSpec& spec, const ParameterServer* server,
            KeyFormats* formats, const Membership* members,
            const StepDriver* steps, Outbox* outbox);
  ReplyDesk(const ReplyDesk&) = delete;
  ReplyDesk& operator=(const ReplyDesk&) = delete;

  /// The workers' clocks, to read (max_clock_gap).
  const SspGate& ssp() const { return ssp_; }
  /// Worker `w`'s push arrived (SspGate::NotePush).
  void NotePush(int w) { ssp_.NotePush(w); }
  /// Worker `w` trains (joined again) or not (done, lost).
  void SetTraining(int w, bool training) { ssp_.SetTraining(w, training); }

  /// `peer` asks for parameters, answering `id`, once the server's version
  /// reaches `min_version`, and with `ssp` once it is within SSP's bound;
  /// `replicated`: the standbys hold the current version. kInvalidArgument
  /// when a reply of it is held already.
  Result<ReplyAnswer> Await(const WorkerPeer& peer, uint64_t id,
                            uint64_t min_version, bool ssp, bool replicated,
                            Time now);
  /// A pull from `peer`: whole tensors at the version it asks for (a
  /// rejoined worker's first at the one it rejoined for). `batches`:
  /// --placement server, where a pull is refused.
  Result<ReplyAnswer> OnPull(WorkerPeer& peer, uint64_t id,
                             std::string_view meta, bool batches,
                             bool replicated, Time now);
  /// `peer`'s push is applied (or held, or dropped): a push is acked; a
  /// push_pull's reply carries the parameters this push helps to make
  /// (sync), the current ones (async), or those once `peer` is within
  /// SSP's bound (ssp); nothing more when its reply went ahead.
  Result<ReplyAnswer> AnswerPush(WorkerPeer& peer, uint64_t id, bool replicated,
                                 Time now);
  /// The held replies that may leave now (a version came, a worker left,
  /// the standbys caught up, training stopped), and those of the next
  /// version with `ahead` (the StepDriver started to update its keys).
  /// Valid until the next call.
  const std::vector<Due>& TakeDue(bool replicated, Time now);
  /// See TakeDue.
  const std::vector<Due>& TakeAhead(Time now);
  /// Whether worker `w` has a reply held; its request id (0: none).
  bool holds(int w) const { return held_[w].waiting; }
  uint64_t held_id(int w) const { return held_[w].waiting ? held_[w].id : 0; }
  /// Worker `w`'s connection is gone: nothing held for it is sent.
  void Forget(int w);

  /// Whether the next reply to worker `w` carries rows.
  bool wants_rows(int w) const { return !rows_[w].want.empty(); }
  /// Sends `peer` the parameters of the current version, or with `ahead`
  /// of the next, answering `id`. REQUIRES: the StepDriver noted it.
  void SendParams(WorkerPeer& peer, uint64_t id, bool ahead);
  /// --placement server: `peer`'s batch_done, answering `id`.
  void SendBatchDone(WorkerPeer& peer, uint64_t id);

 private:
  // A pull (or the pull half of a push_pull) waiting for a version.
  struct Held {
    bool waiting = false;
    uint64_t id = 0;
    uint64_t min_version = 0;
    bool ssp = false;  // ssp: also waits for the slowest
    Time since;
  };
  // A push_pull's row requests, and its reply's message and gathered rows,
  // raw or coded in the pull codec (by request), kept until written.
  struct Rows {
    std::vector<wire::RowRequest> want;
    wire::Params msg;
    std::vector<at::Tensor> rows;
    std::vector<std::vector<uint8_t>> records;
  };

  void Take(WorkerPeer& p, bool ahead, Time now);
  void SendRows(WorkerPeer& peer, uint64_t id);
  void EncodeRow(Rows& r, size_t i);
  std::pair<const void*, uint64_t> ParamBytes(int key, int worker,
                                              uint64_t version);
  void SendFrame(WorkerPeer& peer, uint64_t id, bool tagged);

  const JobSpec& spec_;
  const ParameterServer* server_;
  KeyFormats* formats_;
  const Membership* members_;
  const StepDriver* steps_;
  Outbox* outbox_;
  SspGate ssp_;
  std::vector<Held> held_;  // by worker
  std::vector<Rows> rows_;  // by worker
  std::vector<Due> due_;    // TakeDue's, reused
  OutFrame out_;            // reused for every reply
};

}  // namespace pstrain::ps
