#pragma once
// ServerGroup: a worker's connections to every server of its job. It joins
// them (rank 0 first, which hands out the job spec and where servers
// 1..S-1 listen), exchanges with all of them at once on threads of its own
// (Fanout) while the training thread computes, keeps them told that the
// worker is alive while it computes (Heartbeats), and reconnects to servers
// that went away. A push-pull's gradients leave as backward makes them
// (GradStream), and its replies' parameters arrive while the next forward
// starts (ParamArrivals). Called from the training thread only.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "models/model.h"
#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"
#include "report/event_log.h"
#include "report/worker_stats.h"
#include "trace/timeline.h"
#include "util/fanout.h"
#include "util/result.h"
#include "worker/batch_rows.h"
#include "worker/exchange_round.h"
#include "worker/exchange_spans.h"
#include "worker/grad_stream.h"
#include "worker/heartbeats.h"
#include "worker/host_mirror.h"
#include "worker/master_address.h"
#include "worker/param_arrivals.h"
#include "worker/progress.h"
#include "worker/progress_board.h"
#include "worker/ps_client.h"
#include "worker/push_compressor.h"
#include "worker/row_slices.h"
#include "worker/slice_compressors.h"
#include "worker/trainer.h"

namespace pstrain::worker {

class ServerGroup {
 public:
  /// `options` and `*log` must outlive the group.
  ServerGroup(const TrainerOptions& options, report::EventLog* log);
  ServerGroup(const ServerGroup&) = delete;
  ServerGroup& operator=(const ServerGroup&) = delete;

  /// Connects to rank 0 and takes the job spec, checked as
  /// PsClient::Handshake checks it, with its TorchScript module: the file
  /// of TrainerOptions::model when given (ps::UseOwnModuleFile:
  /// kIncompatible naming both hashes when it is not rank 0's), else
  /// rank 0's bytes (PsClient::FetchModule).
  Result<ps::JobSpec> JoinMaster();
  /// Plans the slices of the model `fingerprint` describes, connects to
  /// servers 1..S-1, and registers the model with every server, which
  /// refuses one that differs from its own (kIncompatible).
  Status JoinServers(const std::vector<wire::KeySpec>& fingerprint);
  /// Exchanges slices of `mirror`'s tensors from now on; pushes wait on
  /// `stream`'s gate. Both must outlive the group. REQUIRES: JoinServers
  /// succeeded. Not called under --placement server.
  void Attach(HostMirror* mirror, GradStream* stream);
  /// Where the training thread waits for the replies of an exchange.
  /// REQUIRES: Attach.
  ParamArrivals& arrivals() { return *arrivals_; }

  using Exchange = ExchangeRound::Kind;
  /// Starts a pull or a push-pull with every server, and returns at once.
  void Start(Exchange what);
  /// Waits for the exchange to end, every reply in; ok when none runs.
  Status Finish();
  /// Start, then Finish.
  Status ExchangeAll(Exchange what);
  /// Backward made the gradients final in another order: from the next
  /// exchange on, pushes follow GradStream's new marks.
  void Reorder() { reorder_ = true; }
  /// After an exchange failed with `why`: reconnects, with exponential
  /// backoff until --reconnect_timeout, to each server whose connection was
  /// lost, then pulls from all. Under --placement server (nothing attached,
  /// nothing to pull) version() becomes the version rank 0 resumed from.
  /// Returns `why` when none was lost or reconnecting is off, and the error
  /// that ended the attempts otherwise.
  Status Reconnect(const Status& why);
  /// Whether the last Reconnect sent the failed step's push again to a
  /// standby that took a lost server's shard over (--replicas): the step
  /// then ended, and version() is its reply's.
  bool resent() const { return resent_; }

  /// The row-sparse model keys (ps/job/sparse_keys.h), by model key: from now
  /// on their slices travel as rows in push_pulls. REQUIRES: Attach.
  void SetRowSparse(const std::vector<bool>& model_keys);
  /// Of row-sparse model key `key`: the model rows this step's batch
  /// touched and those the next batch looks up, each ascending and unique.
  /// Split over the servers' slices for the next push_pull.
  void SetRows(int key, const std::vector<int64_t>& touched,
               const std::vector<int64_t>& next);
  /// Before step `global`'s forward (of `end` steps), with `batch` its
  /// batch: SetRows of every row-sparse key with the batch's ids and those
  /// of the next batch, read ahead with `read`. A forward must read rows
  /// of the current version: when `batch` is not the one whose rows the
  /// last reply brought (a sync worker jumped ahead, a step is redone), the
  /// whole tables are pulled first. No-op without row-sparse keys.
  Status PlanRows(BatchRows& rows, int64_t global, int64_t end,
                  const data::Batch& batch, const BatchRows::ReadBatch& read);
  /// After backward, before the gate opens fully: the touched rows of each
  /// row-sparse key, gathered from its whole gradient (index_select: the
  /// sum over the id's occurrences), for the push.
  void GatherRows();
  /// Rows pushed and asked for by the push_pulls so far, over all servers.
  uint64_t rows_pushed() const { return rows_.rows_pushed(); }
  uint64_t rows_pulled() const { return rows_.rows_pulled(); }

  /// --placement server: `batch` to rank 0's model (PsClient::PushBatch);
  /// once its step is in, version() is rank 0's and *loss the batch's.
  Status PushBatch(const data::Batch& batch, double* loss);

  /// --timeline (TrainerOptions::timeline): the step the training thread
  /// computes, and the exchange it starts next carries.
  void set_step(int64_t step) { step_ = step; }
  /// A span of the training thread's, of the current step and version.
  trace::Timeline::Span SpanOf(const char* what) const {
    return {what, -1, static_cast<int64_t>(version_), step_};
  }

  /// Heartbeats every min(JobSpec::heartbeat, 1) seconds while training;
  /// rank 0's carry the last progress published.
  void StartHeartbeats();
  void StopHeartbeats() { heartbeats_.reset(); }

  /// Rank 0's version of the last parameters in. Push-pull replies set it
  /// once their meta is in (NoteMasterReply).
  uint64_t version() const { return version_; }
  /// Takes rank 0's reply version once ParamArrivals::WaitMeta said every
  /// reply's meta is in.
  void NoteMasterReply() { version_ = clients_[0]->reply_version(); }
  /// Rank 0's connection: the members and stop flag of its last reply.
  const PsClient& master() const { return *clients_[0]; }
  int64_t reconnects() const { return reconnects_; }
  /// Pulls from every server completed so far (each brought whole tables).
  int64_t pulls() const { return pulls_; }
  /// Bytes over the current connections to all servers.
  uint64_t bytes_pushed() const;
  uint64_t bytes_pulled() const;
  /// After each step: `p`'s figures, `loss` (the step's), the bytes and
  /// version so far, for the heartbeats to carry to rank 0.
  void PublishProgress(const Progress& p, double loss);

  /// Reports `stats` to every server, servers 1..S-1 first: rank 0 ends
  /// only after their shards are in.
  Status Done(const report::WorkerStats& stats);

 private:
  std::unique_ptr<PsClient> NewClient(int server_rank) const;
  Status ConnectTo(PsClient& client, int server_rank, bool again = false);
  // How long a rejoin waits at the address rank 0 gave for server s > 0
  // before it asks rank 0 again (Reconnect retries until its deadline).
  static constexpr std::chrono::milliseconds kRejoinConnectTimeout{2000};
  // The job's --transport on `client`'s connection, with its log line.
  Status UseTransport(PsClient& client, const std::string& transport);
  void OrderLink();
  void AttachSlices(PsClient& client, int server_rank);
  std::vector<uint32_t> SliceMarks(int server_rank) const;
  /// --compression: server s's PushCompressor (none when every key is
  /// raw), and GradStream's prepare codes each model key's slices.
  void MakeCompressor(int server_rank);
  std::vector<int> SliceKeys(int server_rank) const;
  Status ExchangeWith(int server_rank);
  bool Resends(const std::vector<int>& lost) const;
  Status Resend(const std::vector<int>& lost);
  Status JoinAgain(int server_rank);

  const TrainerOptions& options_;
  report::EventLog* log_;
  MasterAddress master_;  // where JoinMaster and ConnectTo find rank 0
  ps::JobSpec spec_;
  ps::ShardPlan plan_;
  std::vector<wire::KeySpec> fingerprint_;  // JoinServers', for JoinAgain
  HostMirror* mirror_ = nullptr;
  GradStream* stream_ = nullptr;                    // clients_ watch its gate
  std::unique_ptr<ParamArrivals> arrivals_;         // clients_ report to it
  std::vector<std::unique_ptr<PsClient>> clients_;  // by server rank
  std::mutex clients_mu_;  // an element of clients_ changes under it
  ExchangeRound round_;    // the exchange under way, or the last
  bool resent_ = false;
  // Task 1 + s: the exchange with server s; task 0, the training thread's,
  // has nothing to do: it computes meanwhile.
  std::unique_ptr<Fanout> fanout_;
  bool reorder_ = false;
  // Read by heartbeats_' thread: declared before it, so that it goes last.
  ProgressBoard progress_;
  std::unique_ptr<Heartbeats> heartbeats_;  // while training
  RowSlices rows_;                          // the row-sparse tables' slices
  SliceCompressors compressors_;            // --compression, by server
  int64_t pulls_ = 0;
  int64_t reconnects_ = 0;
  uint64_t version_ = 0;
  int64_t step_ = -1;
  std::vector<std::unique_ptr<ExchangeSpans>> spans_;  // by server, or none
};

}  // namespace pstrain::worker
