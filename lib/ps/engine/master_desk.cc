#include "ps/engine/master_desk.h"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/job/job_spec.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {

namespace {

std::string Rank(int r) {
  return "rank " + std::to_string(r);
}

std::string Ranks(const std::vector<int>& ranks) {
  std::string list;
  for (int r : ranks)
    list += (list.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + list;
}

}  // namespace

MasterDesk::MasterDesk(const JobSpec& spec, std::chrono::milliseconds timeout,
                       PeerTable* peers, Outbox* outbox)
    : spec_(spec), timeout_(timeout), peers_(peers), outbox_(outbox) {}

void MasterDesk::ExpectServers(const ShardPlan* plan,
                               std::vector<at::Tensor> model_params) {
  roster_.Expect(plan, spec_.num_servers, std::move(model_params));
}

// Workers wait for the servers' addresses; servers themselves only need
// the job.
Status MasterDesk::OnGetJob(Peer& peer, uint64_t id) {
  if (!AsServer(peer) && !roster_.all_announced()) {
    peer.job_pending = true;
    peer.job_id = id;
    return Status::Ok();
  }
  ReplyJob(peer, id);
  return Status::Ok();
}

void MasterDesk::ReplyJob(Peer& peer, uint64_t id) {
  JobSpec spec = spec_;
  if (roster_.expecting())
    spec.server_addrs = roster_.addresses();
  wire::JobSpecMsg msg{ToJson(spec).dump()};
  wire::EncodeMeta(msg, &peer.meta);
  Reply(*outbox_, peer, wire::MsgType::kJobSpec, id);
}

// The job's TorchScript module goes straight from the bytes the spec
// keeps, which live as long as the engine.
Status MasterDesk::OnGetModule(Peer& peer, uint64_t id) {
  if (!spec_.module) {
    return InvalidArgument("get_module: the job trains the built-in model " +
                           spec_.model + ", no module");
  }
  wire::ModuleMsg msg;
  msg.sha256 = spec_.model_sha256;
  msg.bytes = DescribeBytes(0, spec_.module->size());
  wire::EncodeMeta(msg, &peer.meta);
  if (peer.closing)
    return Status::Ok();
  OutFrame frame;
  frame.type = wire::MsgType::kModule;
  frame.request_id = id;
  frame.meta = peer.meta;
  frame.data = {DataSpan{spec_.module->data(), spec_.module->size()}};
  outbox_->Send(peer.id, frame);
  return Status::Ok();
}

Status MasterDesk::OnServerInfo(Peer& from, uint64_t id, std::string_view meta,
                                Time now) {
  ServerPeer* server = AsServer(from);
  if (!server)
    return InvalidArgument("server_info from a worker");
  ServerPeer& peer = *server;
  if (!roster_.address(peer.server()).empty())
    return InvalidArgument("second server_info");
  wire::ServerInfo info;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &info));
  const bool took_over = roster_.lost(peer.server());
  PS_RETURN_IF_ERROR(roster_.Announce(peer.server(), info.address));
  if (took_over) {
    outbox_->Info("rank " + std::to_string(peer.rank) +
                  "'s shard was taken over by its standby (--replicas " +
                  std::to_string(spec_.replicas) + ")");
  }
  outbox_->Info("rank " + std::to_string(peer.rank) + " (server) listens at " +
                info.address);
  peer.meta.clear();
  Reply(*outbox_, peer, wire::MsgType::kAck, id);
  if (!roster_.all_announced())
    return Status::Ok();
  for (auto& [c, p] : *peers_) {
    if (!p->job_pending)
      continue;
    p->job_pending = false;
    p->last_heard = std::max(p->last_heard, now);  // it waited on us
    ReplyJob(*p, p->job_id);
  }
  return Status::Ok();
}

Status MasterDesk::PlanShard(Peer& from, std::string_view meta,
                             ReadPlan* plan) {
  ServerPeer* server = AsServer(from);
  if (!server)
    return InvalidArgument("shard from a worker");
  server->shard_coming = true;  // however long it takes, it is not silent
  return roster_.PlanShard(*server, meta, &plan->buffers);
}

// A server that beats and has said nothing for --dead_after is stopped
// (SIGSTOP), or its host is gone, or it is cut off: its kernel may still
// answer TCP's probes, so only its silence tells. Its term ends here: the
// connection is closed with a line that names the term, which the server
// reads when it runs again (MasterClient::Beat) and exits on, and its
// shard is lost (OnClose, Lose) for a standby to take over.
void MasterDesk::FenceSilent(Time now) {
  if (spec_.dead_after <= 0)
    return;
  std::vector<ServerPeer*> silent;
  for (auto& [id, peer] : *peers_) {
    ServerPeer* server = AsServer(*peer);
    if (server && server->beats && !server->closing && !server->shard_in &&
        !server->shard_coming &&
        std::chrono::duration<double>(now - server->last_heard).count() >
            spec_.dead_after) {
      silent.push_back(server);
    }
  }
  for (ServerPeer* server : silent) {
    const int s = server->server();
    std::ostringstream line;
    line << "rank 0 heard nothing from rank " << roster_.process(s) << " for "
         << spec_.dead_after << " s (--dead_after): its term "
         << roster_.term(s) << " as server " << s << " is over";
    outbox_->Info(line.str());
    Refuse(*outbox_, *server, 0, Unavailable(line.str()));
  }
}

// Only a server's shard gets here: PlanShard refused the others.
Status MasterDesk::OnShard(Peer& from, uint64_t id) {
  ServerPeer* server = AsServer(from);
  if (!server)
    return InvalidArgument("shard from a worker");
  roster_.ShardIn(*server);
  server->meta.clear();
  Reply(*outbox_, *server, wire::MsgType::kAck, id);
  return Status::Ok();
}

void MasterDesk::Hello(ServerPeer& peer, int process, Time now) {
  // A lost shard is taken over by its claim's winner, which may be the
  // rank that first served it, started again (--rejoin): a new term.
  const bool takeover = process != peer.server() || roster_.lost(peer.server());
  RefuseHeldClaims(peer.server());  // its server is back (Succeed)
  roster_.Hello(peer.server(), &peer);
  if (takeover)
    roster_.Claimed(peer.server(), process, now);
}

// Server s died before its final shard: its standbys (on ranks
// s+1..s+R-1) claim it once the connection of s is gone, which only this
// rank can see, and the highest copy wins (DecideClaims), so no two
// ranks serve one shard (the handshake refuses a second connection of a
// rank). Workers asking where s listens wait for the winner's address
// (OnGetJob).
void MasterDesk::Lose(ServerPeer& peer, const Status& why, Time now) {
  const int s = peer.server();
  roster_.Lose(s, now);
  std::string standbys;
  for (int i = 1; i < spec_.replicas; ++i) {
    standbys +=
        (i > 1 ? ", " : "") + std::to_string((s + i) % spec_.num_servers);
  }
  outbox_->Info(
      "lost rank " + std::to_string(s) + " (server)" +
      (why.ok() ? "" : " (" + why.message() + ")") + "; waiting up to " +
      std::to_string(TakeoverWait().count() / 1000) +
      " s for its standby (rank " + standbys + ") to take its shard over");
}

void MasterDesk::Disconnect(Peer& peer, bool stopping) {
  ServerPeer* server = AsServer(peer);
  if (server)
    roster_.Disconnect(server->server(), server);
  claims_.Withdraw(peer.id);
  if (!server || stopping)
    return;
  for (int s = 1; s < spec_.num_servers; ++s)
    DecideClaims(s, false);  // its rank may have been waited for
}

// A successor's: s's server may yet rejoin; if it died with the old
// master, its standby's claim is decided after TakeoverWait (DecideUnheard).
Status MasterDesk::HoldClaim(Peer& peer, uint64_t id,
                             const wire::Hello& hello) {
  const int s = static_cast<int>(hello.rank);
  const int by = static_cast<int>(hello.claimant);
  claims_.Add(s, {peer.id, id, by, hello.version});
  outbox_->Info(Rank(by) + "'s standby claims " + Rank(s) +
                "'s shard at version " + std::to_string(hello.version) +
                ", which has not rejoined this master: held up to " +
                std::to_string(TakeoverWait().count() / 1000) + " s");
  return Status::Ok();
}

void MasterDesk::RefuseHeldClaims(int s) {
  if (roster_.lost(s) || !claims_.Waiting(s))
    return;
  for (const ShardClaims::Claim& c : claims_.Take(s)) {
    if (Peer* p = peers_->Find(c.peer)) {
      Refuse(*outbox_, *p, c.request_id,
             InvalidArgument(Rank(s) + " is already connected: its server "
                                       "rejoined this master"));
    }
  }
}

void MasterDesk::DecideUnheard(Time now) {
  if (!succeeded_at_)
    succeeded_at_ = now;
  if (now - *succeeded_at_ <= TakeoverWait())
    return;
  for (int s = 1; s < spec_.num_servers; ++s) {
    if (roster_.heard(s) || roster_.lost(s) || !claims_.Waiting(s))
      continue;
    outbox_->Info(Rank(s) + " did not rejoin this master within " +
                  std::to_string(TakeoverWait().count() / 1000) +
                  " s: it died with the old one");
    roster_.Lose(s, now);
    DecideClaims(s, false, /*at_deadline=*/true);
  }
}

Status MasterDesk::CheckLost(Time now) {
  if (succeeding_)
    DecideUnheard(now);
  const int s = roster_.LostBefore(now - TakeoverWait());
  if (s < 0)
    return Status::Ok();
  if (!claims_.Waiting(s))
    return ShardLost(s);
  DecideClaims(s, false, /*at_deadline=*/true);
  return Status::Ok();
}

bool MasterDesk::RunOver(const Membership& members) const {
  return members.finished() && roster_.all_shards_in();
}

std::vector<MasterDesk::Admission> MasterDesk::TakeAdmissions() {
  return std::move(admissions_);
}

// Twice --dead_after: a standby notices at once when its primary is killed,
// and within --dead_after when its host goes silent.
std::chrono::milliseconds MasterDesk::TakeoverWait() const {
  if (spec_.dead_after <= 0)
    return timeout_;
  return std::chrono::milliseconds(
      static_cast<int64_t>(2000 * spec_.dead_after));
}

// Rank 0's choice of the standby that serves a lost shard (--replicas).
// Each standby of server s claims s's shard when its copy's connection to
// s is gone, saying which version it holds (or that it holds none). The
// shard goes to the highest version claimed, and only once no standby
// that may hold a later one is still to claim: s's standbys live on ranks
// s+1..s+R-1 (ps/rank/standby.h), and those rank 0 sees alive are waited
// for. A standby that released a version to workers held it, so the
// highest copy holds every version a worker has seen; the first claim to
// come may not (a standby that was catching up, or whose copy had not
// landed yet). A claim without a copy is refused; when no copy comes
// within TakeoverWait the run ends naming the shard.
Status MasterDesk::OnClaim(Peer& peer, uint64_t id, const wire::Hello& hello,
                           bool stopping) {
  const int s = static_cast<int>(hello.rank);
  const int by = static_cast<int>(hello.claimant);
  if (by >= spec_.num_servers) {
    return InvalidArgument("claim of " + Rank(s) + "'s shard from rank " +
                           std::to_string(hello.claimant) +
                           ", expected a server rank 0.." +
                           std::to_string(spec_.num_servers - 1));
  }
  if (!roster_.lost(s)) {
    if (succeeding_ && !roster_.heard(s) && hello.claim == wire::Claim::kCopy)
      return HoldClaim(peer, id, hello);
    return InvalidArgument(Rank(s) + "'s shard is not lost: " + Rank(by) +
                           "'s standby has nothing to claim");
  }
  if (hello.claim == wire::Claim::kNoCopy) {
    claims_.AddNoCopy(s, by);
    outbox_->Info(Rank(by) + "'s standby claims " + Rank(s) +
                  "'s shard without a copy of it: refused");
    DecideClaims(s, stopping);  // it was waited for
    return Unavailable(Rank(by) + "'s standby holds no copy of " + Rank(s) +
                       "'s shard: it cannot take it over");
  }
  claims_.Add(s, {peer.id, id, by, hello.version});
  outbox_->Info(Rank(by) + "'s standby claims " + Rank(s) +
                "'s shard at version " + std::to_string(hello.version));
  DecideClaims(s, stopping);
  return Status::Ok();
}

// Every standby of s on a rank rank 0 sees alive that has not claimed.
std::vector<int> MasterDesk::AwaitedClaimants(int s) const {
  std::vector<int> awaited;
  for (int i = 1; i < spec_.replicas; ++i) {
    const int k = (s + i) % spec_.num_servers;
    if (k != s && roster_.alive(k) && !claims_.Heard(s, k))
      awaited.push_back(k);
  }
  return awaited;
}

void MasterDesk::DecideClaims(int s, bool stopping, bool at_deadline) {
  if (stopping || !roster_.lost(s) || !claims_.Waiting(s))
    return;
  const std::vector<int> awaited = AwaitedClaimants(s);
  if (!awaited.empty()) {
    if (!at_deadline)
      return;
    // A standby that has not claimed by now copies nothing: it is not
    // waited for.
    outbox_->Info("no claim of " + Rank(s) + "'s shard from its standby on " +
                  Ranks(awaited) + " within " +
                  std::to_string(TakeoverWait().count() / 1000) + " s");
  }
  const std::vector<ShardClaims::Claim> claims = claims_.Take(s);
  const ShardClaims::Claim& best = claims.front();
  if (!peers_->Find(best.peer))
    return;  // a closed one's claim is withdrawn
  outbox_->Info(Rank(s) + "'s shard goes to " + Rank(best.claimant) +
                "'s standby, at version " + std::to_string(best.version) +
                " (the highest of " + std::to_string(claims.size()) +
                (claims.size() == 1 ? " claim" : " claims") + ")");
  admissions_.push_back({best.peer, s, best.claimant, best.request_id});
  for (size_t i = 1; i < claims.size(); ++i) {
    const ShardClaims::Claim& c = claims[i];
    if (Peer* p = peers_->Find(c.peer)) {
      Refuse(
          *outbox_, *p, c.request_id,
          Unavailable(Rank(best.claimant) +
                      "'s standby holds a later copy "
                      "of " +
                      Rank(s) + "'s shard (version " +
                      std::to_string(best.version) + ", " + Rank(c.claimant) +
                      "'s " + std::to_string(c.version) + ")"));
    }
  }
}

// Shard s is lost for good: no standby took it over, or none that did
// holds a copy of it.
Status MasterDesk::ShardLost(int s) const {
  const std::vector<int> none = claims_.NoCopy(s);
  std::string why = " died and no standby took it over within " +
                    std::to_string(TakeoverWait().count() / 1000) + " s";
  if (!none.empty()) {
    why = " died and no standby holds a copy of it (" + Ranks(none) +
          (none.size() == 1 ? "'s standby had none" : "'s standbys had none") +
          ")";
  }
  return Unavailable("shard " + std::to_string(s) + " is lost: " + Rank(s) +
                     " (server)" + why + " (--replicas " +
                     std::to_string(spec_.replicas) + ")");
}

}  // namespace pstrain::ps
