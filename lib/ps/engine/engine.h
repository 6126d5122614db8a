#pragma once
// Engine: a server's whole conversation with its peers as a state machine,
// with no sockets, no timers and no clock (share/doc/design.md, "The
// Engine's parts"). The Service (ps/service/service.h), its Asio adapter,
// feeds it what its connections read and what happens to them; it answers
// through an Outbox (ps/engine/outbox.h). Time comes in with every input. Which
// message each stage admits and what answers it: share/doc/conversation.md.
//
// The Engine routes each input to the part that owns its rule, the way a
// database's core leans on its version set, memtable and write batch. Each
// is in ps/engine/ unless said otherwise:
//   PeerTable (peer_table.h)      the connections, each typed by role from
//                                 its hello on (peer.h);
//   Membership (membership.h)     who trains: registered, done, lost and
//                                 rejoining workers, and the step's quorum;
//   UpdateRule (ps/rules/update_rule.h)  where pushed bytes land and when a
//                                 step happens, on the ParameterServer;
//   PushReader (push_reader.h)    a push's checks, pieces and NaN refusals;
//   BatchDesk (batch_desk.h)      --placement server's batches;
//   WriteFence (write_fence.h)    no step while parameters are written
//                                 straight from their storage;
//   SspGate (ssp_gate.h)          SSP's staleness bound on replies;
//   StepDeadline (step_deadline.h)  --step_timeout;
//   PeerWatch (peer_watch.h)      --timeout, handshakes, --dead_after;
//   KeyFormats (key_formats.h)    each key's name and codecs;
//   ServerRoster (server_roster.h)  rank 0's view of the other servers;
//   ShardClaims (shard_claims.h)  --replicas: standbys' claims on a lost
//                                 shard;
//   SnapshotQueue (snapshot_queue.h)  snapshots waiting for a version;
//   StandbyAcks (standby_acks.h)  --replicas: what the standbys hold;
//   ProgressFeed (progress_feed.h)  the workers' heartbeat progress.
// What stays here is the handshake (auth, hello, register, done), the held
// replies and key-by-key stepping, rank 0's part with several servers, and
// the snapshots' replies.
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
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/send_gate.h"
#include "ps/engine/batch_desk.h"
#include "ps/engine/batch_runner.h"
#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/outbox.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/progress_feed.h"
#include "ps/engine/pull_records.h"
#include "ps/engine/push_reader.h"
#include "ps/engine/read_plan.h"
#include "ps/engine/server_roster.h"
#include "ps/engine/shard_claims.h"
#include "ps/engine/snapshot_queue.h"
#include "ps/engine/ssp_gate.h"
#include "ps/engine/standby_acks.h"
#include "ps/engine/step_deadline.h"
#include "ps/engine/step_records.h"
#include "ps/engine/write_fence.h"
#include "ps/job/compression_spec.h"
#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "ps/store/snapshot.h"
#include "report/server_stats.h"
#include "report/worker_stats.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct EngineOptions {
  /// How long the job may make no progress before it fails, and how long a
  /// peer may take for its handshake. Default: 120 s.
  std::chrono::milliseconds timeout{120000};
  /// Non-empty: every peer must prove it knows this token (net/auth.h)
  /// before any other frame is accepted. Default: none.
  std::string auth_token;
};

struct Peer;
struct ServerPeer;
struct WorkerPeer;

class Engine {
 public:
  /// `fingerprint`: the server model's keys, which every worker must match.
  Engine(const JobSpec& spec, std::vector<wire::KeySpec> fingerprint,
         ParameterServer* server, Outbox* outbox, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Rank 0 of a job with num_servers S > 1: accepts servers 1..S-1 (hello
  /// as a server, server_info), answers workers' get_job once every server
  /// has said where it listens, and reads each server's final slices
  /// (shard) into `model_params` (the whole model's parameters, key order,
  /// contiguous) as `plan` places them. The run ends once every worker is
  /// done and every server's shard is in. `plan` must outlive the Engine.
  /// REQUIRES: before Start.
  void ExpectServers(const ShardPlan* plan,
                     std::vector<at::Tensor> model_params);
  /// "host:port" where this server listens (rank 0 tells the workers).
  void set_address(std::string address) {
    roster_.set_own_address(std::move(address));
  }
  /// --placement server: batches (push_batch) go to `runner`, which must
  /// outlive the Engine, and must be shaped as `shapes` says; their
  /// results come back through OnBatchDone and are applied as the worker's
  /// push, answered with batch_done. nullptr (the default): push_batch is
  /// refused. REQUIRES: before Start.
  void set_batch_runner(BatchRunner* runner, BatchShapes shapes) {
    batches_.set_runner(runner, std::move(shapes));
  }
  /// Called after each new version is whole (e.g. to evaluate).
  void set_on_version(std::function<void(uint64_t)> fn) {
    on_version_ = std::move(fn);
  }
  /// Called with a registered worker's running progress as its heartbeat
  /// carried it: the worker's rank and a JSON object's text, not parsed
  /// here (the receiver parses it and ignores what it cannot read).
  /// `json` lives only for the call. A heartbeat without progress, and one
  /// from a peer that is not a registered worker, call nothing. On the
  /// thread that calls OnMeta (the io thread).
  void set_on_progress(ProgressFeed::Receiver fn) {
    progress_.set_receiver(std::move(fn));
  }

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
  /// start replies (a key stepped ahead), whose wait ends `now`.
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
  /// deadlines, the job's --timeout. A tick late by more than a tick means
  /// this thread was busy with something of its own: that time is nobody's
  /// silence, and every peer is credited with it.
  void Tick(Time now);
  static constexpr std::chrono::milliseconds kTick = PeerWatch::kTick;
  /// The time asked for with Outbox::WakeAt has come (--step_timeout).
  void OnTimer(Time now);
  /// The work asked for with Outbox::Post.
  void Continue(Time now);
  /// The BatchRunner finished a batch (--placement server): its gradients
  /// are applied as the worker's push, or its error refuses the worker. A
  /// result for a worker gone meanwhile is dropped.
  void OnBatchDone(const BatchResult& result, Time now);

  // Requests from the server's own code.

  using SnapshotDone = SnapshotQueue::Done;
  /// This server's parameters (and, when asked, its optimizer state) at the
  /// first version >= `min_version` once all its keys are stepped, or at
  /// once when it is there or past it; `done` gets nullptr when the run ends
  /// first. `replay` (a standby's): the record of the step that made the
  /// version does, when it is taken as the version is made (TakeStepRecord).
  void RequestSnapshot(uint64_t min_version, bool with_optimizer_state,
                       SnapshotDone done, Time now, bool replay = false);
  /// Ends training now (--target_accuracy reached): pushes from now on are
  /// answered but not applied, and every params reply, the held ones at
  /// once, tells the worker to stop.
  void StopTraining(Time now);
  bool training_stopped() const { return stop_training_; }

  /// The update rule over the ParameterServer (ps/rules/update_rule.h):
  /// its step order and key-by-key stepping, and a standby's applied
  /// pushes (set before Start).
  UpdateRule& rule() { return *rule_; }

  /// Whether the run is over (every worker done, or failed).
  bool stopping() const { return stopping_; }
  /// Ok, or why the job failed: kTimeout naming the ranks waited for.
  const Status& failure() const { return failure_; }
  /// Rank 0 with several servers: where server s listens, "" until it said.
  const std::string& server_address(int s) const { return roster_.address(s); }
  /// Rank 0 with several servers, after the run: server s's optimizer state
  /// as its final shard carried it (SerializeOptimizerState bytes).
  const std::string& shard_optimizer_state(int s) const {
    return roster_.optimizer_state(s);
  }
  /// When the first worker registered: where wall_seconds start.
  Time started_at() const { return members_.first_register(); }
  /// The run's training totals (Service::Stats); `bytes_read`,
  /// `bytes_written`: the connections', headers included. The end-of-run
  /// fields are left for the server rank.
  report::ServerStats Stats(uint64_t bytes_read, uint64_t bytes_written) const;
  /// Workers registered now, neither done nor lost.
  int live_workers() const { return members_.live_count(); }
  /// Seconds replies were held for other workers so far, summed.
  double waiting_seconds() const { return members_.waiting_seconds_now(); }

 private:
  Status HandleFrame(Peer& peer, const wire::FrameHeader& header,
                     std::string_view meta);

  Status OnPushed(Peer& peer, wire::MsgType type, uint64_t id);
  Status OnAuth(Peer& peer, const wire::FrameHeader& header,
                std::string_view meta);
  Status OnHello(Peer& peer, uint64_t id, std::string_view meta);
  Status CheckRank(const wire::Hello& hello) const;
  // Types the peer by its hello's role as `rank`, and answers the hello;
  // a server's connection is served by server rank `process`.
  void Admit(Peer& peer, wire::Role role, int rank, int process, uint64_t id);
  Status OnRegister(Peer& peer, uint64_t id, std::string_view meta);
  Status OnRegister(WorkerPeer& peer, uint64_t id, std::string_view meta);
  Status OnDone(Peer& peer, uint64_t id, std::string_view meta);
  Status OnHeartbeat(Peer& peer, std::string_view meta);
  Status OnGetJob(Peer& peer, uint64_t id);
  void ReplyJob(Peer& peer, uint64_t id);
  Status OnGetModule(Peer& peer, uint64_t id);
  Status OnServerInfo(Peer& peer, uint64_t id, std::string_view meta);
  // A dense key's piece was added (or its record is whole): trace it and
  // step the key ahead where the rule may.
  void PieceAdded(const WorkerPeer& peer, size_t index, int key);
  Status PlanShard(Peer& peer, std::string_view meta, ReadPlan* plan);
  Status OnShard(Peer& peer, uint64_t id);
  Status OnSnapshot(Peer& peer, uint64_t id, std::string_view meta);
  // A standby's reply also carries the snapshot's applied pushes.
  void ReplySnapshot(PeerId to, uint64_t id, bool with_optimizer_state,
                     bool standby, std::shared_ptr<const Snapshot> snapshot);
  bool VersionComplete() const;
  void TakeDueSnapshots(bool just_made);
  void AbandonSnapshots();

  Status PlanPush(Peer& peer, const wire::FrameHeader& header,
                  std::string_view meta, ReadPlan* plan);
  // Where key k's parameters leave from, and how many bytes: the tensor,
  // or its --pull_compression record of `version` (made now, unless the
  // key is still to be stepped: StepNextKey or StepAhead makes it then);
  // for `worker`, whom
  // lookahead (ps::UsesLookahead) sends parameters of its own.
  std::pair<const void*, uint64_t> ParamBytes(int key, int worker,
                                              uint64_t version);
  // Row-sparse replies (engine_rows.cc).
  void SendRows(WorkerPeer& peer, uint64_t id);
  Status OnPull(Peer& peer, uint64_t id, std::string_view meta);
  Status AwaitVersion(WorkerPeer& peer, uint64_t id, uint64_t min_version,
                      bool ssp);
  Status OnPush(WorkerPeer& peer, uint64_t id);
  Result<bool> Step(WorkerPeer& peer, uint64_t version);
  // --placement server (engine_batches.cc).
  Status PlanBatch(Peer& peer, std::string_view meta, ReadPlan* plan);
  Status OnPushBatch(WorkerPeer& peer, uint64_t id);
  void SendBatchDone(WorkerPeer& peer, uint64_t id);
  void ArmStepTimeout();
  void CloseTimedOutStep(uint64_t version);
  void RefusePush(const WorkerPeer& peer, uint64_t version);
  void AnswerPush(WorkerPeer& peer, uint64_t id);
  void RunFenced();
  void RunHeldPushes(const std::vector<WriteFence::Work>& work);
  void ReleaseReplies();
  // The parameters of the current version, or with `ahead` of the next,
  // whose keys the step under way is stepping ahead of its close.
  void SendParams(WorkerPeer& peer, uint64_t id, bool ahead = false);
  // Sends out_'s data with peer.meta as a params frame answering `id`,
  // waiting on the key gate, and tells the WriteFence.
  void SendParamsFrame(WorkerPeer& peer, uint64_t id, bool tagged);
  void OnNewVersion();
  void StepNextKey();
  // Streaming sync: steps `key` before its step closes once every
  // member's pieces of it are in, and starts the replies of the step then
  // (engine_versions.cc).
  void StepAhead(int key);
  void StepKeysAhead();
  bool StartStepAhead();
  void OpenKeyMark(int key);
  void OpenKeyGate();
  void VersionWhole();
  void ResumeParamWrites();

  // --replicas: server s > 0 is gone; its standby takes its shard over
  // (engine_servers.cc). Fails the job once none has within
  // TakeoverWait().
  void LoseServer(ServerPeer& peer, const Status& why);
  void CheckLostServers();
  std::chrono::milliseconds TakeoverWait() const;
  // A standby's claim of a lost shard, and rank 0's choice among them
  // (engine_claims.cc): the highest copy, once no standby rank 0 sees
  // alive is still to claim, or, `at_deadline`, of those that came.
  Status OnClaim(Peer& peer, uint64_t id, const wire::Hello& hello);
  void DecideClaims(int s, bool at_deadline = false);
  void DecideAllClaims();
  std::vector<int> AwaitedClaimants(int s) const;
  Status ShardLost(int s) const;
  // Every version a reply would carry is held by this shard's standbys.
  bool Replicated() const { return server_->version() <= standbys_.held(); }
  bool IsDuplicate(const WorkerPeer& peer) const;
  void LoseWorker(WorkerPeer& peer, const Status& why);
  void LeaveQuorum(int w);
  void RemoveWorker(int w);
  bool LeaveQuorumNow(int w);
  Status Rejoin(WorkerPeer& peer);
  void CheckSilentWorkers();
  void CheckHandshakes();
  void MaybeFinish();

  void Reply(Peer& peer, wire::MsgType type, uint64_t id);
  void Refuse(Peer& peer, uint64_t id, const Status& why);
  std::string Waiting() const;
  void Fail(const Status& status);
  void Shutdown();
  double Seconds(Time from) const;

  JobSpec spec_;
  ParameterServer* server_;
  Outbox* outbox_;
  EngineOptions options_;
  KeyFormats formats_;
  std::unique_ptr<UpdateRule> rule_;
  SspGate ssp_;
  WriteFence fence_;
  Membership members_;
  PeerTable peers_;
  ServerRoster roster_;  // rank 0 with num_servers > 1 (ExpectServers)
  ShardClaims claims_;   // --replicas: claims on lost shards
  SnapshotQueue snapshots_;
  StandbyAcks standbys_;   // --replicas: this shard's standbys
  StepRecords records_;    // the steps they have yet to replay
  StepDeadline deadline_;  // --step_timeout
  PeerWatch watch_;        // --timeout, --dead_after, late ticks
  PushReader reader_;      // pushes into the rule
  // A sync step's keys, stepped one per Continue (OnNewVersion), or ahead
  // of the close: params frames wait on `gate` for the keys not yet
  // stepped (marks by UpdateRule::step_order()); `posted`: Continue
  // steps the next key; `ahead`: keys of the step under way are being
  // stepped before its close, and its replies are out.
  struct KeySteps {
    net::SendGate gate;
    bool stepping = false;
    bool posted = false;
    bool ahead = false;
    bool stop_after = false;  // StopTraining came while `ahead`
  };
  KeySteps key_steps_;
  BatchDesk batches_;  // --placement server
  OutFrame out_;       // reused for every send
  std::function<void(uint64_t)> on_version_;
  ProgressFeed progress_;  // workers' heartbeats' progress
  bool stop_training_ = false;
  bool stopping_ = false;
  Status failure_;
  Time now_{};  // of the input being handled
};

}  // namespace pstrain::ps
