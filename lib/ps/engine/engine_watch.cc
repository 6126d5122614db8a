// The run's end and its watch over time: connections that close, silent
// workers, lost shards, a job that makes no progress, and the failure or
// shutdown that ends it.

#include <sstream>

#include "ps/engine/engine.h"
#include "ps/engine/handshake.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/reply_desk.h"
#include "ps/engine/snapshot_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

namespace {

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream s;
  s << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i)
    s << (i ? ", " : "") << ranks[i];
  return s.str();
}

// Whom the job waits for, for a --timeout's message.
std::string Waiting(const JobSpec& spec, const Membership& members,
                    const UpdateRule& rule, const ServerRoster& roster,
                    uint64_t version) {
  std::vector<int> missing = roster.MissingAddresses();
  for (int w = 0; w < spec.num_workers(); ++w) {
    if (!members.peer(w))
      missing.push_back(w + spec.num_servers);
  }
  if (!missing.empty())
    return RankList(missing) + " to connect";
  if (rule.has_quorum()) {
    for (int w = 0; w < members.num_workers(); ++w) {
      if (members.in_quorum(w) && rule.awaits_push(w) && !members.done(w))
        missing.push_back(w + spec.num_servers);
    }
    if (!missing.empty())
      return RankList(missing) + " to push version " + std::to_string(version);
  }
  for (int w = 0; w < spec.num_workers(); ++w) {
    if (!members.done(w))
      missing.push_back(w + spec.num_servers);
  }
  if (!missing.empty())
    return RankList(missing) + " to finish";
  return RankList(roster.MissingShards()) + " to send its parameters";
}

std::string LostLine(const WorkerPeer& peer, const Status& why,
                     uint64_t version, int others, bool reassign) {
  return "rank " + std::to_string(peer.rank) + " lost at version " +
         std::to_string(version) +
         (why.ok() ? "" : " (" + why.message() + ")") + "; going on with " +
         std::to_string(others) +
         (reassign
              ? " workers, who share its samples until it rejoins"
              : " workers; its shard's batches are skipped until it rejoins");
}

}  // namespace

// A registered worker lost mid-job leaves the quorum and training goes on
// with the rest; the same rank started again rejoins (OnRegister). A
// server lost before its final shard waits for its standby (--replicas)
// or fails the job.
void Engine::OnClose(PeerId id, const Status& why, Time now) {
  run_.now = now;
  Peer* closed = peers_->Retire(id);  // a caller up the stack may hold it
  if (!closed)
    return;
  Peer& peer = *closed;
  peer.closing = true;
  if (steps_->Closed(id))
    outbox_->Post();  // work waited for its writes
  WorkerPeer* worker = AsWorker(peer);
  ServerPeer* server = AsServer(peer);
  const bool shard_out = server && !server->shard_in && !run_.stopping;
  if (Registered(peer) && !run_.stopping) {
    const int w = worker->worker;
    members_->Lose(w);
    replies_->SetTraining(w, false);
    outbox_->Info(LostLine(*worker, why, server_->version(),
                           members_->quorum() - 1, spec_.reassign_shards));
    if (LeaveQuorum(w) && master_->RunOver(*members_))
      Shutdown();
  } else if (shard_out && spec_.replicas > 1) {
    master_->Lose(*server, why, now);
    watch_->Progress(now);
  } else if (shard_out) {
    Fail(Unavailable("rank " + std::to_string(peer.rank) +
                     " (server) disconnected before sending its parameters" +
                     (why.ok() ? "" : " (" + why.message() + ")")));
  } else if (!why.ok() && !run_.stopping) {
    outbox_->Info("dropped connection from " + peer.remote + ": " +
                  why.ToString());
  }
  if (AsTool(peer) && snapshots_->Drop(id, run_.stopping))
    ReleaseReplies();  // no longer waited for
  if (worker)
    members_->Disconnect(worker->worker, worker);
  master_->Disconnect(peer, run_.stopping);
  for (const MasterDesk::Admission& a : master_->TakeAdmissions())
    Admit(a.peer, wire::Role::kServer, a.rank, a.process, a.request_id);
}

void Engine::Tick(Time now) {
  run_.now = now;
  peers_->Sweep();
  if (run_.stopping)
    return;
  watch_->Tick(now, peers_.get());
  // Sync workers that have not been heard of for --dead_after seconds
  // while the step waits on them are lost. Runs every tick, during training
  // too: it must not allocate.
  const UpdateRule& rule = steps_->rule();
  for (int w = 0; w < members_->num_workers() && rule.has_quorum(); ++w) {
    WorkerPeer* p = members_->peer(w);
    // A worker whose get_job this rank holds (it waits for a lost server's
    // standby to say where it listens) waits on us, as one whose reply is
    // held does.
    if (!p || !members_->in_quorum(w) || !rule.awaits_push(w) ||
        !watch_->Silent(*p, replies_->holds(w) || p->job_pending, now))
      continue;
    std::ostringstream line;
    line << "no word from rank " << p->rank << " for " << spec_.dead_after
         << " s (--dead_after)";
    outbox_->Info(line.str());
    Refuse(*outbox_, *p, 0, Timeout(line.str()));
  }
  master_->FenceSilent(now);
  snapshots_->DropLate(now, watch_->dead_after());
  Status lost = master_->CheckLost(now);
  for (const MasterDesk::Admission& a : master_->TakeAdmissions())
    Admit(a.peer, wire::Role::kServer, a.rank, a.process, a.request_id);
  if (!lost.ok())
    return Fail(lost);
  if (watch_->TimedOut(now)) {
    return Fail(
        Timeout("timed out after " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                   watch_->timeout())
                                   .count()) +
                " s waiting for " +
                Waiting(spec_, *members_, rule, master_->roster(),
                        server_->version())));
  }
  handshake_->CloseLate(now);
}

void Engine::Fail(const Status& status) {
  if (run_.stopping)
    return;
  run_.failure = status;
  std::vector<Peer*> told;
  for (auto& [id, peer] : *peers_) {
    if (peer->stage != Peer::Stage::kNew)
      told.push_back(peer.get());
  }
  for (Peer* p : told) {
    const WorkerPeer* worker = AsWorker(*p);
    Refuse(*outbox_, *p, worker ? replies_->held_id(worker->worker) : 0,
           status);
  }
  Shutdown();
}

void Engine::Shutdown() {
  if (run_.stopping)
    return;
  run_.stopping = true;
  snapshots_->Abandon();
  // An observer's connection waits for nothing more: it must not hold the
  // end of the run for the grace period.
  std::vector<PeerId> tools;
  for (auto& [id, peer] : *peers_) {
    if (AsTool(*peer) && !peer->closing)
      tools.push_back(id);
  }
  for (PeerId id : tools) {
    if (Peer* p = peers_->Find(id))
      p->closing = true;
    outbox_->Close(id, Status::Ok());
  }
  outbox_->Shutdown();
}

}  // namespace pstrain::ps
