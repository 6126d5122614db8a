#pragma once
// Engine: a server's whole conversation with its peers as a state machine,
// with no sockets, no timers and no clock (share/doc/design.md, "The
// Engine's parts"). The Service (ps/service/service.h), its Asio adapter,
// feeds it what its connections read and what happens to them; it answers
// through an Outbox (ps/engine/outbox.h). Time comes in with every input. Which
// message each stage admits and what answers it: share/doc/conversation.md.
//
// The Engine sequences its parts, the way leveldb's DBImpl sequences its
// version set, memtable and log: each part owns its state and its
// behaviour, and no part calls another (a part may read another's const
// view). Each is in ps/engine/:
//   StepDriver (step_driver.h)    the one path that changes the update rule
//                                 and the store: pushes read and applied,
//                                 steps closed, keys updated, workers
//                                 removed; the fence, the deadline, the stop;
//   ReplyDesk (reply_desk.h)      the held replies, SSP's gate, and the one
//                                 builder of a reply of parameters;
//   SnapshotDesk (snapshot_desk.h)  snapshots, standbys' acks, step records;
//   MasterDesk (master_desk.h)    rank 0's roles: get_job, get_module, the
//                                 server roster, lost shards' claims;
//   Handshake (handshake.h)       auth, hello, rank checks, register,
//                                 heartbeats;
//   BatchDesk (batch_desk.h)      --placement server's batches.
// What they share is the Engine's: the spec, the peers (PeerTable, and
// Membership, its record of who trains), each key's formats (KeyFormats),
// and the watch over time (PeerWatch).
//
// A peer that sends bad bytes or breaks the protocol gets an error frame and
// is dropped; the job goes on. A registered worker that disconnects is lost:
// sync steps go on without it until the same rank registers again. A push
// whose gradient holds NaN or Inf is refused (counted, logged, never
// applied; the worker still gets its ordinary reply).
//
// Threading: not thread-safe; one thread makes every call. `*server` and
// `*outbox` must outlive the Engine.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ps/engine/outbox.h"
#include "ps/job/job_spec.h"
#include "util/result.h"
#include "util/status.h"
#include "wire/frame.h"
#include "wire/messages.h"

namespace pstrain::report {
struct ServerStats;
}

namespace pstrain::ps {

class ParameterServer;
struct KeyFormats;
class PeerTable;
class Membership;
class PeerWatch;
class StepDriver;
class ReplyDesk;
class SnapshotDesk;
class MasterDesk;
class Handshake;
class BatchDesk;
struct BatchResult;
struct ReadPlan;
struct Peer;
struct WorkerPeer;
struct Snapshot;
struct FenceWork;
enum class ReplyAnswer : uint8_t;

struct EngineOptions {
  /// How long the job may make no progress before it fails, and how long a
  /// peer may take for its handshake. Default: 120 s.
  std::chrono::milliseconds timeout{120000};
  /// Non-empty: every peer must prove it knows this token (net/auth.h)
  /// before any other frame is accepted. Default: none.
  std::string auth_token;
};

class Engine {
 public:
  /// Gets this server's parameters at a version (SnapshotDesk::Request),
  /// or nullptr when the run ends first.
  using SnapshotDone = std::function<void(std::shared_ptr<const Snapshot>)>;
  /// Housekeeping's period (Tick).
  static constexpr std::chrono::milliseconds kTick{200};

  /// `fingerprint`: the server model's keys, which every worker must match.
  Engine(const JobSpec& spec, std::vector<wire::KeySpec> fingerprint,
         ParameterServer* server, Outbox* outbox, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Inputs. Each takes the time it happens at where time matters.

  /// The job's clock starts (--timeout counts from here).
  void Start(Time now);
  /// A connection from `remote` ("127.0.0.1:53124") is open.
  void OnAccept(PeerId peer, std::string remote, Time now);
  /// A frame's header is in, before its meta is read: an error refuses it
  /// (before a hello, only a small hello is read at all).
  Status OnHeader(PeerId peer, const wire::FrameHeader& header);
  /// Header and meta are in, and checked by wire::FrameParser: fills `*plan`
  /// (cleared by the caller) with where `data_bytes` data bytes go, or
  /// refuses the frame.
  Status OnMeta(PeerId peer, const wire::FrameHeader& header,
                std::string_view meta, uint64_t data_bytes, ReadPlan* plan);
  /// Buffer `index` of the plan is in (piece-by-piece reads). A piece may
  /// start replies (a key updated ahead), whose wait ends `now`.
  void OnPiece(PeerId peer, size_t index, Time now);
  /// Buffer `index` of the plan is in at `data`, where it lies in a
  /// shared-memory ring (ReadPlan::in_place): returns whether it was taken
  /// from there (or dropped, as OnPiece drops it); false: copy it into the
  /// buffer, then OnPiece.
  bool OnPieceAt(PeerId peer, size_t index, const uint8_t* data, Time now);
  /// The whole frame is in. A refusal is answered by an error frame and the
  /// peer is closed.
  void OnFrame(PeerId peer, const wire::FrameHeader& header,
               std::string_view meta, Time now);
  /// A frame of `type` sent to `peer` has left: its borrowed data may change.
  void OnWritten(PeerId peer, wire::MsgType type, Time now);
  /// The peer's connection closed: ok for an orderly close, else why.
  void OnClose(PeerId peer, const Status& why, Time now);
  /// Housekeeping, every kTick: silent workers (--dead_after), handshake
  /// deadlines, lost shards, the job's --timeout. A tick late by more than
  /// a tick means this thread was busy with something of its own: that
  /// time is nobody's silence, and every peer is credited with it.
  void Tick(Time now);
  /// The time asked for with Outbox::WakeAt has come (--step_timeout).
  void OnTimer(Time now);
  /// The work asked for with Outbox::Post.
  void Continue(Time now);
  /// The BatchRunner finished a batch (--placement server): its gradients
  /// are applied as the worker's push, or its error refuses the worker. A
  /// result for a worker gone meanwhile is dropped.
  void OnBatchDone(const BatchResult& result, Time now);

  // Requests from the server's own code.

  /// This server's parameters (and, when asked, its optimizer state) at the
  /// first version >= `min_version` once it is complete, or at once when it
  /// is there; `done` gets nullptr when the run ends first. `replay` (a
  /// standby's): the record of the step that made the version does, when
  /// it is taken as the version is made (TakeStepRecord).
  void RequestSnapshot(uint64_t min_version, bool with_optimizer_state,
                       SnapshotDone done, Time now, bool replay = false);
  /// Ends training now (--target_accuracy reached): pushes from now on are
  /// answered but not applied, and every params reply, the held ones at
  /// once, tells the worker to stop.
  void StopTraining(Time now);

  // The parts a server's own code sets up (before Start) and reads.

  /// The rule and the store's one writer: its view (rule(), stopped()),
  /// and a standby's applied pushes (set_applied, before Start).
  StepDriver& steps() { return *steps_; }
  /// Rank 0's roles: ExpectServers, set_address, the servers' addresses
  /// and final optimizer states.
  MasterDesk& master() { return *master_; }
  const MasterDesk& master() const { return *master_; }
  /// --placement server: set_runner (before Start).
  BatchDesk& batches() { return *batches_; }
  /// set_on_version: called after each new version is complete.
  SnapshotDesk& snapshots() { return *snapshots_; }
  /// set_on_progress: each registered worker's heartbeat progress.
  Handshake& handshake() { return *handshake_; }
  /// Who trains: live_count, waiting_seconds_now, first_register.
  const Membership& members() const { return *members_; }
  /// Whether the run is over (every worker done, or failed).
  bool stopping() const { return run_.stopping; }
  /// Ok, or why the job failed: kTimeout naming the ranks waited for.
  const Status& failure() const { return run_.failure; }
  /// The run's training totals (Service::Stats); `bytes_read`,
  /// `bytes_written`: the connections', headers included. The end-of-run
  /// fields are left for the server rank.
  report::ServerStats Stats(uint64_t bytes_read, uint64_t bytes_written) const;

 private:
  // The run's own state: the time of the input being handled, and whether
  // it is ending, and why.
  struct Run {
    Time now{};
    bool stopping = false;
    Status failure;
  };

  Status HandleFrame(Peer& peer, const wire::FrameHeader& header,
                     std::string_view meta);
  Status OnHello(Peer& peer, uint64_t id, std::string_view meta);
  // `peer` joins as `rank`, a server's served by rank `process`.
  void Admit(PeerId peer, wire::Role role, int rank, int process, uint64_t id);
  Status OnRegister(Peer& peer, uint64_t id, std::string_view meta);
  Status OnDone(Peer& peer, uint64_t id, std::string_view meta);
  // A worker's pull, push, push_pull or push_batch.
  Status OnWorkerRequest(Peer& peer, const wire::FrameHeader& header,
                         std::string_view meta);
  // Sends the parameters as the ReplyDesk decided (kNow, kAhead), after
  // the StepDriver noted them; refuses the worker on an error.
  void SendReply(WorkerPeer& peer, uint64_t id,
                 const Result<ReplyAnswer>& answer);
  void ReleaseReplies();
  // A step closed: its replies go, its keys are updated, and a complete
  // version is announced.
  void OnStepClosed();
  // Key `key` of the step under way may be updated ahead of its close.
  void KeyIn(int key);
  void RunFenced();
  void RunHeldPushes(const std::vector<FenceWork>& work);
  // Returns false when the fence holds the removal (RunFenced redoes it).
  bool LeaveQuorum(int w);
  void Fail(const Status& status);
  void Shutdown();

  JobSpec spec_;
  ParameterServer* server_;
  Outbox* outbox_;
  std::unique_ptr<KeyFormats> formats_;
  std::unique_ptr<PeerTable> peers_;
  std::unique_ptr<Membership> members_;
  std::unique_ptr<PeerWatch> watch_;
  std::unique_ptr<StepDriver> steps_;
  std::unique_ptr<ReplyDesk> replies_;
  std::unique_ptr<SnapshotDesk> snapshots_;
  std::unique_ptr<MasterDesk> master_;
  std::unique_ptr<Handshake> handshake_;
  std::unique_ptr<BatchDesk> batches_;
  Run run_;
};

}  // namespace pstrain::ps
