#include "ps/engine/peer_watch.h"

#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"

namespace pstrain::ps {

PeerWatch::PeerWatch(std::chrono::milliseconds timeout, double dead_after)
    : timeout_(timeout), dead_after_(dead_after) {}

void PeerWatch::Start(Time now) {
  last_tick_ = last_progress_ = now;
}

void PeerWatch::Tick(Time now, PeerTable* peers) {
  if (last_tick_ != Time{} && now - last_tick_ > 2 * kTick) {
    const auto late = now - last_tick_ - kTick;
    for (const auto& [id, peer] : *peers) {
      peer->last_heard += late;
      peer->accepted_at += late;
    }
    last_progress_ += late;
  }
  last_tick_ = now;
}

// A peer that never finishes its handshake holds a connection (and memory)
// for nothing.
void PeerWatch::LateHandshakes(const PeerTable& peers, Time now,
                               std::vector<PeerId>* late) const {
  for (const auto& [id, peer] : peers) {
    if (peer->stage == Peer::Stage::kNew && !peer->closing &&
        now - peer->accepted_at > timeout_) {
      late->push_back(id);
    }
  }
}

bool PeerWatch::Silent(const WorkerPeer& p, bool reply_held, Time now) const {
  return dead_after_ > 0 && p.stage == Peer::Stage::kRegistered && !p.closing &&
         !p.batch.in_flight && !reply_held &&
         std::chrono::duration<double>(now - p.last_heard).count() >
             dead_after_;
}

}  // namespace pstrain::ps
