#include "ps/engine/membership.h"

#include <algorithm>
#include <string>

#include "ps/engine/peer.h"
#include "util/check.h"

namespace pstrain::ps {

Membership::Membership(int num_servers, int num_workers)
    : num_servers_(num_servers), workers_(num_workers) {}

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

void Membership::Rejoin(int w) {
  workers_[w].lost = false;
  PS_CHECK(!workers_[w].in_quorum)
      << "rank " << num_servers_ + w << " rejoins while in the quorum";
  workers_[w].in_quorum = true;
}

void Membership::Register(int w, WorkerPeer* peer, Time now) {
  workers_[w].peer = peer;
  if (registered_++ == 0)
    first_register_ = now;
}

void Membership::Lose(int w) {
  workers_[w].lost = true;
  ++losses_;
}

void Membership::Finish(int w, report::WorkerStats stats,
                        double waiting_seconds, Time now) {
  stats_.push_back(std::move(stats));
  waiting_seconds_ += waiting_seconds;
  workers_[w].done = true;
  last_done_ = now;
}

bool Membership::LeaveQuorum(int w) {
  if (!workers_[w].in_quorum)
    return false;
  workers_[w].in_quorum = false;
  return true;
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
