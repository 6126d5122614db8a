#pragma once
// Service: puts a ParameterServer on the network. Accepts worker
// connections, runs the handshake (hello, job spec, model fingerprint),
// answers pulls and push-pulls (holding sync replies until the step closes),
// collects each worker's final stats, and never hangs silently: a watchdog
// names the ranks it waits for once nothing has progressed for `timeout`.
//
// A peer that sends bad bytes or breaks the protocol gets an error frame and
// is dropped; the job goes on. So is, after `timeout`, a peer that has not
// finished its handshake (hello, and auth with a token), that stopped in
// the middle of a frame, or that does not take in a frame written to it. A registered worker that disconnects before
// it is done fails the job (kUnavailable naming its rank).
//
// A push whose gradient holds NaN or Inf is refused: counted
// (refused_pushes in Stats), logged with the worker's rank and the key, and
// never applied; the worker still gets the ordinary reply, so no step waits
// for it and the job goes on. Async and ssp check the whole gradient before
// the step. Sync checks each piece before it is added; as earlier pieces of
// the push may be in the sums already, the whole step is then skipped
// (ParameterServer::DiscardStep: version + 1, parameters unchanged).
// Time the io thread spends on anything of its own (or the process being
// held up) never counts as a peer's silence: the housekeeping tick moves
// every peer's clock on by the time it ran late (--dead_after, --timeout).
//
// Snapshots: a tool peer (rank 0's observer, ps/observer.h) or rank 0's own
// code asks for this server's parameters at a version; they are copied when
// that version is made (ps/snapshot.h) and handed over, so that evaluation
// and checkpoints never stall a step. StopTraining ends a run early
// (--target_accuracy).
// Threading: everything runs on the io_context's thread. `*io`, `*server`
// and `*log` must outlive the Service.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "net/listener.h"
#include "net/send_gate.h"
#include "ps/job_spec.h"
#include "ps/parameter_server.h"
#include "ps/shard_plan.h"
#include "ps/snapshot.h"
#include "report/event_log.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct ServiceOptions {
  std::string host = "localhost";
  int port = 29500;  // 0: the kernel picks; see port()
  /// How long the job may make no progress before the Service gives up.
  std::chrono::milliseconds timeout{120000};
  uint64_t max_frame_bytes = wire::kDefaultMaxFrameBytes;
  /// Non-empty: every connection must prove it knows this token (net/auth.h)
  /// before any other frame is accepted. Default: none.
  std::string auth_token;
};

class Service : private net::Connection::Handler {
 public:
  /// `fingerprint`: the server model's keys, which every worker must match.
  Service(asio::io_context* io, const JobSpec& spec,
          std::vector<wire::KeySpec> fingerprint, ParameterServer* server,
          report::EventLog* log, ServiceOptions options);
  ~Service() override;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Period of the housekeeping tick: silent workers (--dead_after),
  /// stalled peers and the job's --timeout are checked this often.
  static constexpr std::chrono::milliseconds kTick{200};

  /// Binds host:port. kUnavailable when the port is taken.
  Status Listen();
  int port() const { return listener_.port(); }

  /// Rank 0 of a job with num_servers S > 1: accepts servers 1..S-1 (hello
  /// as a server, server_info), answers workers' get_job once every server
  /// has said where it listens (JobSpec::server_addrs), and reads each
  /// server's final slices (shard) into `model_params` (the whole model's
  /// parameters, key order, contiguous) as `plan` places them. Run ends once
  /// every worker is done and every server's shard is in. `plan` must
  /// outlive the Service. REQUIRES: before Run.
  void ExpectServers(const ShardPlan* plan, std::vector<at::Tensor> model_params);

  /// Called on the io thread after each new version (e.g. to evaluate).
  void set_on_version(std::function<void(uint64_t)> fn) {
    on_version_ = std::move(fn);
  }

  /// Called with a snapshot, or with nullptr when the run ends or fails
  /// before it could be taken.
  using SnapshotDone = std::function<void(std::shared_ptr<const Snapshot>)>;
  /// This server's parameters (and, when asked, its optimizer state) at the
  /// first version >= `min_version` it makes once all its keys are stepped,
  /// or at once when it is there or past it. `done` runs on the io thread.
  /// REQUIRES: on the io thread.
  void RequestSnapshot(uint64_t min_version, bool with_optimizer_state, SnapshotDone done);

  /// Ends training now (--target_accuracy reached): pushes from now on are
  /// answered but not applied, and every params reply, the pending ones at
  /// once, tells the worker to stop (wire::Params::stop). Finished workers
  /// leave a sync step's quorum anyway, so the run then ends as usual.
  /// REQUIRES: on the io thread.
  void StopTraining();
  bool training_stopped() const { return stop_training_; }

  /// Rank 0 with several servers (ExpectServers): "host:port" where server
  /// s (1..S-1) listens, "" until it said. REQUIRES: on the io thread.
  const std::string& server_address(int s) const { return server_addrs_[s]; }
  /// Rank 0 with several servers, after Run: server s's optimizer state as
  /// its final shard carried it (SerializeOptimizerState bytes).
  const std::string& shard_optimizer_state(int s) const;
  /// When the first worker registered: where wall_seconds start.
  std::chrono::steady_clock::time_point started_at() const { return first_register_; }

  /// Serves until every worker is done (ok) or the job fails: kTimeout
  /// naming the ranks waited for, kUnavailable naming a lost worker.
  Status Run();

  /// Totals for the summary: bytes_pushed, bytes_pulled (bytes), samples,
  /// workers_lost,
  /// dropped_pushes and timed_out_steps (sync with backup workers or a step
  /// timeout),
  /// wall_seconds (first registration to last done), and the workers' mean
  /// compute_seconds, communication_seconds (the time the workers were
  /// blocked on their push-pulls, less waiting) and
  /// waiting_seconds (replies held for other workers, sync mode),
  /// refused_pushes (NaN or Inf) and discarded_steps (sync steps skipped
  /// for a refused push).
  nlohmann::json Stats() const;
  nlohmann::json StalenessHistogram() const;

 private:
  struct Peer;

  Status OnHeader(net::Connection& conn, const wire::FrameHeader& header) override;
  Status OnMeta(net::Connection& conn, const wire::FrameHeader& header,
                std::string_view meta, uint64_t data_bytes,
                std::vector<asio::mutable_buffer>* dst) override;
  void OnFrame(net::Connection& conn, const wire::FrameHeader& header,
               std::string_view meta) override;
  void OnClose(net::Connection& conn, const Status& why) override;
  void OnPiece(net::Connection& conn, size_t index) override;
  Status PlanPush(net::Connection& conn, Peer& peer, wire::MsgType type,
                  std::string_view meta, std::vector<asio::mutable_buffer>* dst);
  Status CheckPushKeys(const std::vector<wire::TensorDesc>& grads, const char* what);
  void PlanPieces(Peer& peer, const std::vector<wire::TensorDesc>& grads,
                  std::vector<asio::mutable_buffer>* dst);

  Status HandleFrame(Peer& peer, const wire::FrameHeader& header,
                     std::string_view meta);
  Status OnAuth(Peer& peer, const wire::FrameHeader& header,
                std::string_view meta);
  Status OnHello(Peer& peer, uint64_t id, std::string_view meta);
  Status CheckRank(const wire::Hello& hello) const;
  Status OnGetJob(Peer& peer, uint64_t id);
  void ReplyJob(Peer& peer, uint64_t id);
  Status OnServerInfo(Peer& peer, uint64_t id, std::string_view meta);
  Status PlanShard(Peer& peer, std::string_view meta,
                   std::vector<asio::mutable_buffer>* dst);
  Status OnShard(Peer& peer, uint64_t id);
  Status OnSnapshot(Peer& peer, uint64_t id, std::string_view meta);
  void ReplySnapshot(Peer& peer, uint64_t id, bool with_optimizer_state,
                     std::shared_ptr<const Snapshot> snapshot);
  bool VersionComplete() const;
  void TakeDueSnapshots();
  void AbandonSnapshots();
  void LeaveQuorum(int w);
  void CreditStall();
  void MaybeFinish();
  void LoseWorker(Peer& peer, const Status& why);
  void RemoveLost(int w);
  void CheckSilentWorkers();
  Status Rejoin(Peer& peer);
  void RunPending();
  Status OnRegister(Peer& peer, uint64_t id, std::string_view meta);
  Status OnPull(Peer& peer, uint64_t id, std::string_view meta);
  Status AwaitVersion(Peer& peer, uint64_t id, uint64_t min_version,
                      bool ssp = false);
  Status OnPush(Peer& peer, uint64_t id);
  Result<bool> Step(Peer& peer);
  void ArmStepTimer();
  void OnStepTimeout(uint64_t version);
  void RefusePush(const Peer& peer, uint64_t version);
  void AnswerPush(Peer& peer, uint64_t id);
  void RunDeferred();
  void OnWritten(net::Connection& conn, wire::MsgType type) override;
  Status OnDone(Peer& peer, uint64_t id, std::string_view meta);
  void Reply(Peer& peer, wire::MsgType type, uint64_t id);
  void SendParams(Peer& peer, uint64_t id);
  void OnNewVersion();
  void StepKeys();
  void ResumeParamWrites();
  void ReleaseReplies();
  std::optional<uint64_t> SlowestOtherClock(int worker) const;
  bool SspAllows(const Peer& peer) const;
  void NoteClock(const Peer& peer);
  void Tick();
  void DropStalledPeers();
  std::string Waiting() const;
  void Fail(const Status& status);
  void Shutdown();

  asio::io_context* io_;
  JobSpec spec_;
  std::vector<wire::KeySpec> fingerprint_;
  ParameterServer* server_;
  report::EventLog* log_;
  ServiceOptions options_;
  net::Listener listener_;
  asio::steady_timer timer_;
  asio::steady_timer step_timer_;            // --step_timeout
  uint64_t step_timer_version_ = UINT64_MAX; // the step it is armed for
  uint64_t timed_out_steps_ = 0;
  std::unordered_map<net::Connection*, std::unique_ptr<Peer>> peers_;
  std::vector<Peer*> workers_;  // by worker index; null until registered
  std::vector<bool> key_seen_;  // CheckPushKeys's, kept to reuse
  struct Deferred {
    Peer* peer;
    uint64_t id;
  };
  std::vector<Deferred> deferred_;  // pushes waiting for params writes
  int params_in_flight_ = 0;        // params frames being written
  // Params frames wait on it for keys not yet stepped (OnNewVersion).
  net::SendGate step_gate_;
  bool stepping_keys_ = false;
  std::vector<uint64_t> clocks_;     // pushes per worker index
  std::vector<bool> done_workers_;   // by worker index
  std::vector<bool> lost_;           // by worker index: gone, may rejoin
  int lost_count_ = 0;
  uint64_t workers_lost_ = 0;        // losses so far (a rank may come back)
  std::vector<int> pending_removals_;  // lost while params were being written
  uint64_t refused_pushes_ = 0;    // pushes holding NaN or Inf
  uint64_t max_clock_gap_ = 0;       // steps ahead of the slowest, at most
  // Rank 0 with num_servers > 1 (ExpectServers).
  const ShardPlan* plan_ = nullptr;
  std::vector<at::Tensor> model_params_;
  std::vector<std::string> server_addrs_;  // by server index; [0]: ours
  std::vector<Peer*> servers_;             // by server index; null until hello
  int announced_ = 0;                      // servers with an address
  int shards_ = 0;                         // servers whose slices are in
  wire::Shard shard_msg_;                  // reused
  std::vector<std::string> shard_optimizer_states_;  // by server index
  wire::Params params_msg_;     // descriptors built once
  std::function<void(uint64_t)> on_version_;
  struct SnapshotRequest {
    uint64_t min_version;
    bool with_optimizer_state;
    SnapshotDone done;
  };
  std::vector<SnapshotRequest> snapshot_requests_;
  bool stop_training_ = false;
  std::chrono::steady_clock::time_point last_tick_{};
  int registered_ = 0;
  int done_ = 0;
  bool stopping_ = false;
  Status failure_;
  std::chrono::steady_clock::time_point last_progress_;
  std::chrono::steady_clock::time_point first_register_;
  std::chrono::steady_clock::time_point last_done_;
  uint64_t closed_bytes_read_ = 0;
  uint64_t closed_bytes_written_ = 0;
  nlohmann::json worker_stats_ = nlohmann::json::array();
};

}  // namespace pstrain::ps
