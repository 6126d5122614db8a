#pragma once
// PeerTable: the Engine's open connections by id, each a Peer from accept
// on and its role's type (ps/engine/peer.h) from its hello on. A peer that
// closes, or that becomes its role's type, leaves the table at once but is
// freed only at the next Sweep, since a caller up the stack may still hold it.
//
// Threading: not thread-safe; the Engine's thread only. Owns its peers.

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ps/engine/engine_clock.h"
#include "ps/engine/peer.h"

namespace pstrain::ps {

class PeerTable {
 public:
  using Map = std::unordered_map<PeerId, std::unique_ptr<Peer>>;

  PeerTable() = default;
  PeerTable(const PeerTable&) = delete;
  PeerTable& operator=(const PeerTable&) = delete;

  /// A connection from `remote` opened at `now`; `auth_token` (may be
  /// empty: none) is what it must prove it knows.
  Peer& Add(PeerId id, std::string remote, const std::string& auth_token,
            Time now);
  /// The open peer `id`, or null.
  Peer* Find(PeerId id) const;
  /// The open worker `id`, or null (unknown, or of another role).
  WorkerPeer* FindWorker(PeerId id) const;
  /// `peer` (open) becomes a P made of it and `args`; the old object is
  /// retired. Returns the new one.
  template <typename P, typename... Args>
  P& Become(Peer& peer, Args... args) {
    std::unique_ptr<Peer>& slot = peers_[peer.id];
    auto typed = std::make_unique<P>(std::move(peer), args...);
    P& p = *typed;
    retired_.push_back(std::move(slot));
    slot = std::move(typed);
    return p;
  }
  /// Peer `id` closed: it leaves the table; returns it (alive until the
  /// next Sweep), or null when it is unknown.
  Peer* Retire(PeerId id);
  /// Frees the retired peers. REQUIRES: no caller holds one.
  void Sweep() { retired_.clear(); }
  /// Retired peers not yet freed.
  size_t retired() const { return retired_.size(); }

  /// The open peers, in no particular order.
  Map::const_iterator begin() const { return peers_.begin(); }
  /// See begin().
  Map::const_iterator end() const { return peers_.end(); }
  /// Open peers.
  size_t size() const { return peers_.size(); }

 private:
  Map peers_;
  std::vector<std::unique_ptr<Peer>> retired_;
};

}  // namespace pstrain::ps
