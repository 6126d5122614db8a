#pragma once
// A standby: one server rank's copy of another server's shard (--replicas
// R: server r keeps standbys of servers r-1, ..., r-R+1, modulo the
// servers), kept on a thread of its own, and the takeover of that shard
// when its server dies.
//
// What is copied: first the shard's parameters and buffers and the
// optimizer's state, whole, as rank 0's evaluations get them
// (wire::Snapshot with the standby flag); then, version after version, the
// record of the step that made it (wire::StepRecord: the gradient the
// optimizer stepped with, the buffers, the lr), which the standby replays
// on its copy with the same libtorch arithmetic, bit for bit
// (ParameterServer::Replay). That is the shard's bytes per version, where a
// whole copy is the shard plus its optimizer state (twice the bytes with
// momentum, and a serialization on each side). A version a record cannot
// make (one stepped key by key, a job with row-sparse keys, or a version
// the standby asked for late) comes whole instead, and a standby that
// missed versions catches up with it.
//
// The primary answers workers only once its standbys hold the version
// (ps/engine/standby_acks.h), so no version a worker has seen is lost with it.
// When the connection to the primary is lost, the standby asks rank 0 to
// let it be server `shard`: a hello as that rank that claims the shard
// with the version of its copy (or says it holds none), which rank 0
// refuses while the primary's own connection is up. Rank 0 alone sees
// every server's connection, so at most one rank serves a shard; it gives
// the shard to the highest copy claimed, once no standby it sees alive is
// still to claim, and refuses a claim without a copy
// (ps/engine/shard_claims.h). A standby refused so copies the shard again
// from the one that won. Li et al.,
// "Scaling Distributed Machine Learning with the Parameter Server", OSDI
// 2014, section 4.3 (replication after aggregation) and 4.4 (server
// management); the chain here is a star: every standby copies the primary.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "net/connection.h"
#include "ps/job/job_spec.h"
#include "ps/rank/master_client.h"
#include "ps/store/parameter_server.h"
#include "report/event_log.h"
#include "util/result.h"

namespace pstrain::ps {

class Succession;

/// The servers whose shards server `rank` keeps standbys of: rank - 1 down
/// to rank - R + 1, modulo spec.num_servers, nearest first. Empty with
/// --replicas 1. Rank 0's shard goes with the master's roles: its standby
/// takes it over only once the arbiter names it master
/// (ps/rank/succession.h), and with no arbiter only ever copies it.
std::vector<int> StandbyShards(const JobSpec& spec, int rank);

struct StandbyOptions {
  int shard = 1;  // the server rank whose shard is copied
  int rank = 0;   // this server's own rank, which its claim names
  std::string master_addr = "localhost";
  int master_port = 29500;
  std::chrono::milliseconds timeout{120000};
  net::ConnectionOptions connection;
  std::string auth_token;
  /// Who names the next master (--rdzv_backend launch); nullptr: none, so
  /// rank 0's shard is never claimed.
  Succession* succession = nullptr;
  /// This standby runs in the master's own process (rank 0, not started
  /// again): a master gone from under it has no successor to claim from,
  /// as the process is ending.
  bool in_master = false;
};

enum class StandbyEnd {
  kPrimaryEnded,  // the run ended, or the shard has another server now
  kTookOver,      // rank 0 let this standby be server `shard`, or, for
                  // rank 0's shard, the arbiter named it master
};

/// Copies server `options.shard`'s shard into `server` (its keys, their
/// optimizer state and version; `server` is the shard's ParameterServer,
/// which no Engine serves yet) until its primary's run ends or its
/// connection is lost. Then, when rank 0 lets it, returns kTookOver with
/// `*master` connected and said hello as rank `shard`, and `*job` the job
/// rank 0 gave it (with where the servers listen): serve the shard, with
/// `*applied` (by worker) the primary's applied pushes at the version held
/// (UpdateRule::applied); `*applied` is left as it was before any copy.
/// For rank 0's shard, kTookOver once options.succession named this
/// process master, with `*master` null and `*job` the job `spec`.
/// Errors: kCorruption for an optimizer state that does not load.
Result<StandbyEnd> FollowPrimary(const StandbyOptions& options,
                                 const JobSpec& spec, ParameterServer& server,
                                 std::vector<int64_t>* applied,
                                 std::unique_ptr<MasterClient>* master,
                                 JobSpec* job, report::EventLog* log);

}  // namespace pstrain::ps
