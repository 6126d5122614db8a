#include "ps/rank/standby.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <utility>

#include <ATen/core/grad_mode.h>

#include "net/client.h"
#include "ps/rank/server_beats.h"
#include "ps/rank/snapshot_client.h"
#include "ps/rank/succession.h"
#include "ps/store/checkpoint.h"
#include "ps/store/parameter_server.h"
#include "rdzv/master_key.h"

namespace pstrain::ps {

namespace {

using Clock = std::chrono::steady_clock;

// How long a standby tries to reach its primary, or rank 0, before it
// asks again: a primary that is gone refuses at once.
constexpr std::chrono::milliseconds kConnectTimeout{2000};
constexpr std::chrono::milliseconds kRetry{200};
// How long a claim tries to reach rank 0, which is gone at the end of a
// run. Once connected, it waits up to --timeout for rank 0's choice.
constexpr std::chrono::milliseconds kClaimTimeout{10000};

// Where server `shard` listens now, from rank 0 (which answers once every
// server has said where it listens).
Result<std::string> PrimaryAddress(const StandbyOptions& o, const JobSpec& spec,
                                   std::chrono::milliseconds timeout) {
  std::string host = o.master_addr;
  int port = o.master_port;
  PS_RETURN_IF_ERROR(FindMaster(o.succession, {}, "", &host, &port));
  MasterClient ask(timeout, o.connection, o.auth_token);
  PS_RETURN_IF_ERROR(ask.Connect(host, port));
  PS_ASSIGN_OR_RETURN(JobSpec job,
                      ask.Handshake(0, spec.world_size, wire::Role::kTool));
  if (static_cast<int>(job.server_addrs.size()) <= o.shard) {
    return Corruption("rank 0's job names " +
                      std::to_string(job.server_addrs.size()) +
                      " servers, expected " + std::to_string(spec.num_servers));
  }
  return job.server_addrs[o.shard];
}

// One reply, where its bytes land. A copy lands whole here before it
// becomes the shard's (a primary that dies mid-copy leaves the standby at
// the version before). A standby has two: the next reply lands in one
// while the other is loaded or replayed, each in place.
struct Landed {
  std::vector<at::Tensor> tensors;  // the shard's keys, or a step's values
  bool step_record = false;
  double lr = 0;
  std::string optimizer_state;
  std::vector<int64_t> applied;
};

// Copies every version the primary at `address` makes until the
// connection ends; `*copied` turns true once a version has landed.
// Returns whether the primary ended it (its run is over).
// The first copy is whole; from then on the standby asks for the record
// of each next step and replays it (Li et al., OSDI 2014, section 4.3),
// and the primary sends a whole copy instead when it has no record of that
// step (the standby asked late, or the step was not one Step made).
Result<bool> Copy(const StandbyOptions& o, const JobSpec& spec,
                  const std::string& address, ParameterServer& server,
                  std::vector<int64_t>* held_applied, bool* copied,
                  report::EventLog* log) {
  SnapshotClient primary(o.shard, spec.world_size, o.timeout, o.connection,
                         o.auth_token);
  primary.set_connect_timeout(kConnectTimeout);
  if (!primary.Connect(address).ok())
    return false;
  Landed landed, loading;
  for (const at::Tensor& p : server.params()) {
    landed.tensors.push_back(p.detach().clone());
    loading.tensors.push_back(p.detach().clone());
  }
  const bool replay = !server.has_row_sparse();
  // The first copy is of the version the primary holds now, whatever it
  // is; each later one is of the version after the one held. The request
  // for the next version acknowledges this one as soon as its bytes are
  // in: loading them is this process's own work, off the primary's path.
  const uint64_t next = server.version() == 0 ? 0 : server.version() + 1;
  if (!primary
           .Ask(next, landed.tensors, &landed.optimizer_state, &landed.applied)
           .ok())
    return false;
  for (;;) {
    auto version = primary.Answer();
    if (!version.ok())
      return primary.refused();
    landed.step_record = primary.step_record();
    landed.lr = primary.step_lr();
    const std::string from = "rank " + std::to_string(o.shard);
    if (*version < server.version() ||
        (landed.step_record && *version != server.version() + 1)) {
      return Corruption(from + " sent version " + std::to_string(*version) +
                        (landed.step_record ? " as a step record" : "") +
                        " to its standby, which holds " +
                        std::to_string(server.version()));
    }
    if (landed.applied.size() != static_cast<size_t>(server.num_workers())) {
      return Corruption(from + " sent " +
                        std::to_string(landed.applied.size()) +
                        " workers' applied pushes, expected " +
                        std::to_string(server.num_workers()));
    }
    std::swap(loading, landed);  // the next reply lands in the other
    if (!primary
             .Ask(*version + 1, landed.tensors, &landed.optimizer_state,
                  &landed.applied, replay)
             .ok())
      return false;
    if (loading.step_record) {
      server.Replay(loading.tensors, loading.lr);
    } else {
      at::NoGradGuard no_grad;
      for (size_t k = 0; k < loading.tensors.size(); ++k)
        server.params()[k].detach().copy_(loading.tensors[k]);
      PS_RETURN_IF_ERROR(LoadOptimizerStateBytes(loading.optimizer_state,
                                                 server.optimizers(),
                                                 from + "'s optimizer state"));
    }
    *held_applied = loading.applied;
    server.set_version(*version);
    *copied = true;
    if (!loading.step_record) {
      log->Info("standby of " + from + ": holds version " +
                std::to_string(*version) + ", copied whole" +
                (replay ? "; it replays each step from here" : ""));
    }
  }
}

// Where server o.shard listens now, into `*address`; false (logged) when
// rank 0 is gone.
bool FindPrimary(const StandbyOptions& o, const JobSpec& spec,
                 std::string* address, report::EventLog* log) {
  // Asked again: rank 0 may have lost the primary too, and answers no one
  // where the servers listen until a standby's claim decides who serves
  // the shard, which may be this one's: keep the address, and claim when
  // it fails again.
  const bool again = !address->empty();
  auto asked = PrimaryAddress(o, spec, again ? kConnectTimeout : o.timeout);
  if (again && asked.status().code() == StatusCode::kTimeout)
    return true;
  if (!asked.ok()) {
    log->Info("standby of rank " + std::to_string(o.shard) +
              ": rank 0 is gone (" + asked.status().message() +
              "); the standby ends");
    return false;
  }
  *address = *asked;
  return true;
}

// Whether the primary has been unreachable, while rank 0 still sees it,
// for longer than --timeout since `lost_since` (logged).
bool GaveUp(const StandbyOptions& o, Clock::time_point lost_since,
            report::EventLog* log) {
  if (Clock::now() - lost_since <= o.timeout)
    return false;
  log->Info("standby of rank " + std::to_string(o.shard) +
            ": the primary is unreachable, and rank 0 still sees it; the "
            "standby ends");
  return true;
}

// What rank 0 answered a standby's claim.
enum class Claimed {
  kYes,               // the shard is this standby's
  kLost,              // another's copy is later, or this one holds none
  kPrimaryConnected,  // rank 0 still sees the primary
  kEnd,               // the run is ending, or rank 0 is gone
};

// Rank 0's shard goes with the master's roles, which only the arbiter
// moves: whether it named this process master once rank 0 was gone (it
// refuses connections), or rank 0 still lives (the copy alone broke).
// `copied`: whether this standby holds a copy; one that does not may
// still be named (launch's word comes whatever it holds), but does not
// put itself forward.
Claimed AwaitSuccession(const StandbyOptions& o, const JobSpec& spec,
                        bool copied, report::EventLog* log) {
  const std::string name = "standby of rank 0";
  const auto deadline = Clock::now() + o.timeout;
  const bool may =
      o.succession != nullptr && (copied || !o.succession->Campaigns());
  while (Clock::now() < deadline) {
    if (may && o.succession->Named(kRetry, rdzv::LeaseFor(spec.dead_after))) {
      log->Info(name +
                ": named the master by the arbiter; takes rank 0's "
                "shard and roles over");
      return Claimed::kYes;
    }
    // Only whether something listens there: no hello, so nothing to say.
    std::string host = o.master_addr;
    int port = o.master_port;
    net::Client probe(o.connection);
    if (FindMaster(o.succession, {}, "", &host, &port).ok() &&
        probe.Connect(host, port, kRetry).ok()) {
      return Claimed::kPrimaryConnected;
    }
    if (o.succession == nullptr) {
      log->Info(name + ": rank 0 is gone; the standby ends");
      return Claimed::kEnd;
    }
  }
  log->Info(name +
            ": rank 0 is gone and no arbiter named this rank the "
            "master within --timeout; the standby ends");
  return Claimed::kEnd;
}

// One claim of server o.shard's shard from the master: connect, then the
// claim's hello (MasterClient::Claim). `*lost`: where a master was gone
// ("": none yet), which a successor replaces; set to where this one was.
Result<JobSpec> Claim(const StandbyOptions& o, const JobSpec& spec,
                      std::optional<uint64_t> version,
                      std::unique_ptr<MasterClient>* master,
                      std::string* lost) {
  *master = std::make_unique<MasterClient>(std::min(o.timeout, kClaimTimeout),
                                           o.connection, o.auth_token);
  std::string host = o.master_addr;
  int port = o.master_port;
  const auto wait = lost->empty() ? std::chrono::seconds(0)
                                  : 2 * rdzv::LeaseFor(spec.dead_after);
  PS_RETURN_IF_ERROR(FindMaster(o.succession, wait, *lost, &host, &port));
  *lost = host + ":" + std::to_string(port);
  PS_RETURN_IF_ERROR((*master)->Connect(host, port));
  (*master)->set_timeout(o.timeout);
  return (*master)->Claim(o.shard, spec.world_size, o.rank, version);
}

// Claims server o.shard's shard from rank 0 with the version of the copy
// held (nullopt: none). Rank 0 gives it to the highest copy among its
// standbys' claims, and answers once it has chosen: up to --timeout.
Result<Claimed> ClaimShard(const StandbyOptions& o, const JobSpec& spec,
                           std::optional<uint64_t> version,
                           std::unique_ptr<MasterClient>* master, JobSpec* job,
                           report::EventLog* log) {
  const std::string name = "standby of rank " + std::to_string(o.shard);
  if (o.shard == 0) {
    Claimed claimed = AwaitSuccession(o, spec, version.has_value(), log);
    if (claimed == Claimed::kYes && !version) {
      // Launch holds the job with this rank now: its exit ends it.
      ExitFenced(Unavailable("named the master, but this rank holds no copy "
                             "of rank 0's shard yet: the job cannot go on"),
                 log);
    }
    if (claimed == Claimed::kYes)
      *job = spec;
    return claimed;
  }
  // A master gone without a word may have a successor (o.succession),
  // which listens where it did once named: the claim goes there.
  const auto deadline = Clock::now() + o.timeout;
  std::string lost;
  for (;;) {
    auto claimed = Claim(o, spec, version, master, &lost);
    if (claimed.ok()) {
      *job = std::move(*claimed);
      job->module = spec.module;
      log->Info(name + ": took its shard over at version " +
                std::to_string(version.value_or(0)));
      return Claimed::kYes;
    }
    const std::string why = claimed.status().message();
    if ((*master)->refused()) {
      if (claimed.status().code() == StatusCode::kUnavailable) {
        log->Info(name + ": " + why + "; it copies the shard from its server");
        return Claimed::kLost;
      }
      if (why.find("already connected") != std::string::npos)
        return Claimed::kPrimaryConnected;
    } else if (o.succession != nullptr && !o.in_master &&
               Clock::now() < deadline) {
      log->Info(name + ": the master is gone (" + why +
                "); it claims the shard again from its successor");
      std::this_thread::sleep_for(kRetry);
      continue;
    }
    log->Info(name + ": ends (" + why + ")");
    return Claimed::kEnd;
  }
}

}  // namespace

std::vector<int> StandbyShards(const JobSpec& spec, int rank) {
  std::vector<int> shards;
  const int n = spec.num_servers;
  for (int i = 1; i < std::min(spec.replicas, n); ++i)
    shards.push_back(((rank - i) % n + n) % n);
  return shards;
}

Result<StandbyEnd> FollowPrimary(const StandbyOptions& o, const JobSpec& spec,
                                 ParameterServer& server,
                                 std::vector<int64_t>* applied,
                                 std::unique_ptr<MasterClient>* master,
                                 JobSpec* job, report::EventLog* log) {
  // Since when the primary is unreachable while rank 0 still sees it.
  Clock::time_point lost_since = Clock::time_point::max();  // not yet
  std::string address;
  bool copied = false;  // the seed's (or a restart's) state is no copy
  for (;;) {
    // Asked again once another server took the shard: while it has lost
    // the primary, rank 0 answers no one where the servers listen.
    if ((address.empty() || Clock::now() - lost_since > kConnectTimeout) &&
        !FindPrimary(o, spec, &address, log)) {
      return StandbyEnd::kPrimaryEnded;
    }
    const uint64_t before = server.version();
    PS_ASSIGN_OR_RETURN(const bool ended,
                        Copy(o, spec, address, server, applied, &copied, log));
    if (ended)
      return StandbyEnd::kPrimaryEnded;
    if (server.version() != before)
      lost_since = Clock::time_point::max();  // it copied: reachable again
    // The primary is gone, or unreachable: claim its shard.
    PS_ASSIGN_OR_RETURN(
        const Claimed claimed,
        ClaimShard(
            o, spec,
            copied ? std::optional<uint64_t>(server.version()) : std::nullopt,
            master, job, log));
    if (claimed == Claimed::kYes || claimed == Claimed::kEnd) {
      return claimed == Claimed::kYes ? StandbyEnd::kTookOver
                                      : StandbyEnd::kPrimaryEnded;
    }
    if (claimed == Claimed::kLost) {
      // Copy the shard again from whichever server serves it now.
      address.clear();
      lost_since = Clock::time_point::max();
      continue;
    }
    // Rank 0 still sees the primary: it is alive (the copy's connection
    // alone broke), or its death has not reached rank 0 yet.
    if (lost_since == Clock::time_point::max())
      lost_since = Clock::now();
    if (GaveUp(o, lost_since, log))
      return StandbyEnd::kPrimaryEnded;
    std::this_thread::sleep_for(kRetry);
  }
}

}  // namespace pstrain::ps
