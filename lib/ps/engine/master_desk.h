#pragma once
// MasterDesk: rank 0's roles in a job, the master's (share/doc/design.md,
// "The Engine's parts"): the job spec and the TorchScript module every
// process asks for (get_job, get_module), and, with several servers, the
// ServerRoster (server_roster.h: where each server listens, whose final
// shard is in, which shards are lost), the shard plan, and --replicas'
// choice of the standby that takes a lost shard over (ShardClaims,
// shard_claims.h). All of a master's state is here, so that another
// server could take the role over.
//
// A claim's winner is admitted as the lost server's rank by the Engine's
// handshake: the desk hands out what it decided (TakeAdmissions) and calls
// no other part.
//
// Threading: not thread-safe; the Engine's thread only. The pointers given
// must outlive it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ps/engine/outbox.h"
#include "ps/engine/read_plan.h"
#include "ps/engine/server_roster.h"
#include "ps/engine/shard_claims.h"
#include "util/status.h"
#include "wire/messages.h"

namespace pstrain::ps {

struct JobSpec;
struct ShardPlan;
class PeerTable;
class Membership;
struct Peer;
struct ServerPeer;

class MasterDesk {
 public:
  /// A claim's winner, to be admitted as server `rank` served by rank
  /// `process`, answering `request_id`.
  struct Admission {
    PeerId peer;
    int rank;
    int process;
    uint64_t request_id;
  };

  /// `timeout`: --timeout, how long a lost shard waits for a standby when
  /// --dead_after is off.
  MasterDesk(const JobSpec& spec, std::chrono::milliseconds timeout,
             PeerTable* peers, Outbox* outbox);
  MasterDesk(const MasterDesk&) = delete;
  MasterDesk& operator=(const MasterDesk&) = delete;

  /// Rank 0 of a job with num_servers S > 1: accepts servers 1..S-1, answers
  /// workers' get_job once every server has said where it listens, and
  /// reads each server's final slices into `model_params` (the whole
  /// model's parameters, key order, contiguous) as `plan` places them.
  /// `plan` must outlive the desk. REQUIRES: before Engine::Start.
  void ExpectServers(const ShardPlan* plan,
                     std::vector<at::Tensor> model_params);
  /// A successor of rank 0 (ps/rank/master_rank.h), whose servers come
  /// back to it: each server s rejoins with a hello, or, when s died with
  /// the old master, its standby claims s. A claim of a shard whose
  /// server has not said hello here is held, and refused ("already
  /// connected") when that server does; once TakeoverWait has passed
  /// since the first tick, a shard still unheard of with claims is lost,
  /// and its claims decide. REQUIRES: after ExpectServers.
  void Succeed() { succeeding_ = true; }
  /// "host:port" where this server listens (rank 0 tells the workers).
  void set_address(std::string address) {
    roster_.set_own_address(std::move(address));
  }
  /// The other servers, to read.
  const ServerRoster& roster() const { return roster_; }
  /// Whether the run is over: every worker is done or lost for good (at
  /// least one done, `members`), and every other server's final shard is
  /// in.
  bool RunOver(const Membership& members) const;
  /// Whether `peer` claimed a lost shard and waits for the choice.
  bool claiming(PeerId peer) const { return claims_.Claiming(peer); }

  /// get_job: the spec, with every server's address once all have said
  /// it (a worker's waits until then).
  Status OnGetJob(Peer& peer, uint64_t id);
  /// get_module: the job's TorchScript module; kInvalidArgument for a
  /// built-in model.
  Status OnGetModule(Peer& peer, uint64_t id);
  /// server_info from a server at `now`: where it listens. Once every
  /// server has said so, the get_jobs held are answered, and each asker
  /// is heard as of `now`: it waited on us (PeerWatch::Silent).
  Status OnServerInfo(Peer& peer, uint64_t id, std::string_view meta, Time now);
  /// A server's final shard: where its bytes go.
  Status PlanShard(Peer& peer, std::string_view meta, ReadPlan* plan);
  /// The shard is in.
  Status OnShard(Peer& peer, uint64_t id);

  /// Server `peer` said hello as server `rank`, served by rank `process`
  /// (a standby's, when they differ).
  void Hello(ServerPeer& peer, int process, Time now);
  /// Server `peer` is gone before its final shard (--replicas): its
  /// standbys may claim the shard within TakeoverWait.
  void Lose(ServerPeer& peer, const Status& why, Time now);
  /// A connection closed: its claims are withdrawn, and a server's rank
  /// is no longer alive (claims that waited for it are decided).
  void Disconnect(Peer& peer, bool stopping);
  /// A standby's claim of a lost shard (hello with a claim).
  Status OnClaim(Peer& peer, uint64_t id, const wire::Hello& hello,
                 bool stopping);
  /// Every tick (--dead_after > 0): each server that sends heartbeats and
  /// has been silent for longer than --dead_after at `now` (not while its
  /// final shard comes in) is refused with a line naming its term, and
  /// closed; its shard is then lost as a closed server's is.
  void FenceSilent(Time now);
  /// Every tick: a shard lost for longer than TakeoverWait is decided
  /// among its claims, or fails the job (the Status says why).
  Status CheckLost(Time now);
  /// The claims decided since the last call, to admit.
  std::vector<Admission> TakeAdmissions();

 private:
  void ReplyJob(Peer& peer, uint64_t id);
  Status HoldClaim(Peer& peer, uint64_t id, const wire::Hello& hello);
  void RefuseHeldClaims(int s);
  void DecideUnheard(Time now);
  void DecideClaims(int s, bool stopping, bool at_deadline = false);
  std::vector<int> AwaitedClaimants(int s) const;
  Status ShardLost(int s) const;
  std::chrono::milliseconds TakeoverWait() const;

  const JobSpec& spec_;
  std::chrono::milliseconds timeout_;
  PeerTable* peers_;
  Outbox* outbox_;
  ServerRoster roster_;  // rank 0 with num_servers > 1 (ExpectServers)
  ShardClaims claims_;   // --replicas: claims on lost shards
  std::vector<Admission> admissions_;
  bool succeeding_ = false;           // Succeed
  std::optional<Time> succeeded_at_;  // its first tick
};

}  // namespace pstrain::ps
