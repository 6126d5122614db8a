// Connections that end, and membership: a worker lost mid-job (its
// connection closed, or silent for --dead_after seconds) leaves the sync
// quorum and training goes on with the rest; the same rank started again
// rejoins at the current version.

#include <sstream>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"

namespace pstrain::ps {

void Engine::OnClose(PeerId id, const Status& why, Time now) {
  now_ = now;
  Peer* closed = peers_.Retire(id);  // a caller up the stack may hold it
  if (!closed)
    return;
  Peer& peer = *closed;
  peer.closing = true;
  if (fence_.Closed(id))
    outbox_->Post();  // work waited for its writes
  WorkerPeer* worker = AsWorker(peer);
  ServerPeer* server = AsServer(peer);
  if (Registered(peer) && !stopping_) {
    LoseWorker(*worker, why);
  } else if (server && !server->shard_in && !stopping_ && spec_.replicas > 1) {
    LoseServer(*server, why);
  } else if (server && !server->shard_in && !stopping_) {
    Fail(Unavailable("rank " + std::to_string(peer.rank) +
                     " (server) disconnected before sending its parameters" +
                     (why.ok() ? "" : " (" + why.message() + ")")));
  } else if (!why.ok() && !stopping_) {
    outbox_->Info("dropped connection from " + peer.remote + ": " +
                  why.ToString());
  }
  if (AsTool(peer) && standbys_.Drop(id) && !stopping_) {
    records_.DropThrough(standbys_.held());
    outbox_->Info("a standby of this server's shard disconnected; " +
                  std::to_string(standbys_.count()) + " left");
    ReleaseReplies();  // no longer waited for
  }
  if (worker)
    members_.Disconnect(worker->worker, worker);
  if (server)
    roster_.Disconnect(server->server(), server);
  claims_.Withdraw(id);
  if (server && !stopping_)
    DecideAllClaims();  // its rank may have been waited for
}

void Engine::LoseWorker(WorkerPeer& peer, const Status& why) {
  const int w = peer.worker;
  members_.Lose(w);
  outbox_->Info(
      "rank " + std::to_string(peer.rank) + " lost at version " +
      std::to_string(server_->version()) +
      (why.ok() ? "" : " (" + why.message() + ")") + "; going on with " +
      std::to_string(members_.quorum() - 1) +
      (spec_.reassign_shards
           ? " workers, who share its samples until it rejoins"
           : " workers; its shard's batches are skipped until it rejoins"));
  RemoveWorker(w);
}

// Sync: a worker that is done no longer holds a step back. (The run
// cannot end here: the worker is not counted done yet.)
void Engine::LeaveQuorum(int w) {
  if (rule_->has_quorum() && members_.in_quorum(w))
    LeaveQuorumNow(w);
}

// A lost worker leaves the quorum, and the run may end without it.
void Engine::RemoveWorker(int w) {
  if (LeaveQuorumNow(w))
    MaybeFinish();
}

// Returns false when the fence holds the removal (RunFenced redoes it).
bool Engine::LeaveQuorumNow(int w) {
  const Membership::Removal removal = members_.Remove(w);
  if (removal == Membership::Removal::kHeld)
    return false;
  if (removal == Membership::Removal::kStepped)
    OnNewVersion();
  ReleaseReplies();  // ssp: the lost worker holds no one back
  StepKeysAhead();   // keys that waited only for it
  return true;
}

// A lost rank registering again: back in the quorum from the next version
// (or this one, if no push of it is in yet); in ssp at the slowest clock,
// so that it holds no one back.
Status Engine::Rejoin(WorkerPeer& peer) {
  PS_ASSIGN_OR_RETURN(const bool now, members_.Rejoin(peer.worker));
  peer.first_pull_min_version =
      rule_->RejoinPullVersion(server_->version(), now);
  outbox_->Info("rank " + std::to_string(peer.rank) + " rejoined at version " +
                std::to_string(server_->version()));
  return Status::Ok();
}

// Sync workers that have not been heard of for --dead_after seconds while
// the step waits on them are lost: their connection is closed.
void Engine::CheckSilentWorkers() {
  if (spec_.dead_after <= 0 || !rule_->has_quorum())
    return;
  // Runs every tick, during training too: it must not allocate.
  for (int w = 0; w < server_->num_workers(); ++w) {
    if (!members_.in_quorum(w) || !rule_->awaits_push(w))
      continue;
    WorkerPeer* p = members_.peer(w);
    if (p && watch_.Silent(*p, now_)) {
      std::ostringstream why;
      why << "no word from rank " << p->rank << " for " << spec_.dead_after
          << " s (--dead_after)";
      outbox_->Info(why.str());
      Refuse(*p, 0, Timeout(why.str()));
    }
  }
}

// Done once every worker is done or lost for good (at least one done), and
// every other server's slices are in.
void Engine::MaybeFinish() {
  if (stopping_ || !members_.finished())
    return;
  if (!roster_.all_shards_in())
    return;
  Shutdown();
}

}  // namespace pstrain::ps
