// Membership: a worker lost mid-job (its connection closed, or silent for
// --dead_after seconds) leaves the sync quorum and training goes on with
// the rest; the same rank started again rejoins at the current version.

#include <algorithm>
#include <sstream>

#include "ps/service.h"
#include "ps/service_peer.h"

namespace pstrain::ps {

void Service::LoseWorker(Peer& peer, const Status& why) {
  const int w = peer.worker;
  lost_[w] = true;
  ++lost_count_;
  ++workers_lost_;
  log_->Info("rank " + std::to_string(peer.rank) + " lost at version " +
             std::to_string(server_->version()) +
             (why.ok() ? "" : " (" + why.message() + ")") + "; going on with " +
             std::to_string(server_->members() - 1) +
             (spec_.reassign_shards ? " workers, who share its samples until it rejoins"
                                     : " workers; its shard's batches are skipped until it rejoins"));
  if (params_in_flight_ > 0) {  // removing may step: not under a params write
    pending_removals_.push_back(w);
    return;
  }
  RemoveLost(w);
}

// Sync: a worker that is done or lost no longer holds a step back; removing
// it may close the step, so not while parameters are being written.
void Service::LeaveQuorum(int w) {
  if (spec_.mode != Mode::kSync || !server_->is_member(w)) return;
  if (params_in_flight_ > 0) {
    pending_removals_.push_back(w);
    return;
  }
  RemoveLost(w);
}

void Service::RemoveLost(int w) {
  if (server_->is_member(w) && server_->RemoveWorker(w)) OnNewVersion();
  ReleaseReplies();  // ssp: the lost worker holds no one back
  MaybeFinish();
}

// Sync workers that have not been heard of for --dead_after seconds while
// the step waits on them are lost: their connection is closed.
void Service::CheckSilentWorkers() {
  if (spec_.dead_after <= 0 || spec_.mode != Mode::kSync) return;
  const auto limit = std::chrono::duration<double>(spec_.dead_after);
  // Runs every tick, during training too: it must not allocate.
  for (int w = 0; w < server_->num_workers(); ++w) {
    if (!server_->awaits_push(w)) continue;
    Peer* p = workers_[w];
    if (p && p->stage == Peer::Stage::kRegistered &&
        Clock::now() - p->last_heard > limit) {
      std::ostringstream why;
      why << "no word from rank " << p->rank << " for " << spec_.dead_after
          << " s (--dead_after)";
      log_->Info(why.str());
      p->conn->SendErrorAndClose(0, Timeout(why.str()));
    }
  }
}

// A lost rank registering again: back in the quorum from the next version
// (or this one, if no push of it is in yet); in ssp at the slowest clock,
// so that it holds no one back.
Status Service::Rejoin(Peer& peer) {
  const int w = peer.worker;
  if (std::find(pending_removals_.begin(), pending_removals_.end(), w) !=
      pending_removals_.end()) {
    return Unavailable("rank " + std::to_string(peer.rank) +
                       " is still being removed; try again");
  }
  lost_[w] = false;
  --lost_count_;
  const bool now = server_->AddWorker(w);
  peer.first_pull_min_version =
      (spec_.mode == Mode::kSync && !now) ? server_->version() + 1 : 0;
  if (auto slowest = SlowestOtherClock(w)) clocks_[w] = *slowest;
  log_->Info("rank " + std::to_string(peer.rank) + " rejoined at version " +
             std::to_string(server_->version()));
  return Status::Ok();
}

void Service::RunPending() {
  std::vector<int> removals;
  removals.swap(pending_removals_);
  for (int w : removals) RemoveLost(w);
  if (params_in_flight_ == 0 && !deferred_.empty()) RunDeferred();
}

}  // namespace pstrain::ps
