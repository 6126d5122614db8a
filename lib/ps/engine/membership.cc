#include "ps/engine/membership.h"

#include <algorithm>
#include <string>

#include "ps/engine/peer.h"
#include "ps/engine/ssp_gate.h"
#include "ps/engine/write_fence.h"
#include "ps/rules/update_rule.h"
#include "util/check.h"

namespace pstrain::ps {

Membership::Membership(int num_servers, int num_workers, UpdateRule* rule,
                       SspGate* ssp, WriteFence* fence)
    : num_servers_(num_servers),
      rule_(rule),
      ssp_(ssp),
      fence_(fence),
      workers_(num_workers) {}

Status Membership::CheckMember(int w) const {
  return in_quorum(w)
             ? Status::Ok()
             : InvalidArgument("push from a worker that is not a member");
}

int Membership::quorum() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](const Worker& w) { return w.in_quorum; }));
}

Status Membership::CheckRegister(int w) const {
  if (workers_[w].peer == nullptr && !workers_[w].done)
    return Status::Ok();
  return InvalidArgument("rank " + std::to_string(num_servers_ + w) +
                         " has already registered");
}

Result<bool> Membership::Rejoin(int w) {
  if (fence_->removing(w)) {
    return Unavailable("rank " + std::to_string(num_servers_ + w) +
                       " is still being removed; try again");
  }
  workers_[w].lost = false;
  PS_CHECK(!workers_[w].in_quorum)
      << "rank " << num_servers_ + w << " rejoins while in the quorum";
  workers_[w].in_quorum = true;
  const bool joins_now = rule_->AddWorker(w);
  ssp_->SetTraining(w, true);
  return joins_now;
}

void Membership::Register(int w, WorkerPeer* peer, Time now) {
  workers_[w].peer = peer;
  if (registered_++ == 0)
    first_register_ = now;
}

void Membership::Lose(int w) {
  workers_[w].lost = true;
  ++losses_;
  ssp_->SetTraining(w, false);
}

void Membership::Finish(int w, report::WorkerStats stats,
                        double waiting_seconds, Time now) {
  stats_.push_back(std::move(stats));
  waiting_seconds_ += waiting_seconds;
  workers_[w].done = true;
  last_done_ = now;
  ssp_->SetTraining(w, false);
}

// Leaving the quorum may close the step: not while parameters are written.
Membership::Removal Membership::Remove(int w) {
  if (fence_->Holds({WriteFence::Work::Kind::kRemoveWorker, w, 0, 0, 0}))
    return Removal::kHeld;
  if (!workers_[w].in_quorum)
    return Removal::kNone;
  workers_[w].in_quorum = false;
  if (rule_->RemoveWorker(w))
    return Removal::kStepped;
  return Removal::kNone;
}

void Membership::Disconnect(int w, const WorkerPeer* peer) {
  if (workers_[w].peer == peer)
    workers_[w].peer = nullptr;
}

int Membership::done_count() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](const Worker& w) { return w.done; }));
}

int Membership::lost_count() const {
  return static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(),
                    [](const Worker& w) { return w.lost; }));
}

double Membership::waiting_seconds_now() const {
  double total = waiting_seconds_;
  for (const Worker& w : workers_) {
    if (w.peer != nullptr && !w.done)
      total += w.peer->waiting_seconds;
  }
  return total;
}

int Membership::live_count() const {
  return static_cast<int>(std::count_if(
      workers_.begin(), workers_.end(),
      [](const Worker& w) { return w.peer != nullptr && !w.done && !w.lost; }));
}

bool Membership::finished() const {
  const int done = done_count();
  return done > 0 && done + lost_count() >= num_workers();
}

}  // namespace pstrain::ps
