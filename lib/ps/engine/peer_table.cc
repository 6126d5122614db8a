#include "ps/engine/peer_table.h"

namespace pstrain::ps {

Peer& PeerTable::Add(PeerId id, std::string remote,
                     const std::string& auth_token, Time now) {
  auto peer = std::make_unique<Peer>();
  peer->id = id;
  peer->remote = std::move(remote);
  peer->auth = net::AuthGate(auth_token);
  peer->accepted_at = peer->last_heard = now;
  Peer& added = *peer;
  peers_[id] = std::move(peer);
  return added;
}

Peer* PeerTable::Find(PeerId id) const {
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : it->second.get();
}

WorkerPeer* PeerTable::FindWorker(PeerId id) const {
  Peer* peer = Find(id);
  return peer ? AsWorker(*peer) : nullptr;
}

Peer* PeerTable::Retire(PeerId id) {
  auto it = peers_.find(id);
  if (it == peers_.end())
    return nullptr;
  retired_.push_back(std::move(it->second));
  peers_.erase(it);
  return retired_.back().get();
}

}  // namespace pstrain::ps
