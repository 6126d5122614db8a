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

#include <string>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"

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

Status Engine::OnClaim(Peer& peer, uint64_t id, const wire::Hello& hello) {
  const int s = static_cast<int>(hello.rank);
  const int by = static_cast<int>(hello.claimant);
  if (by >= spec_.num_servers) {
    return InvalidArgument("claim of " + Rank(s) + "'s shard from rank " +
                           std::to_string(hello.claimant) +
                           ", expected a server rank 0.." +
                           std::to_string(spec_.num_servers - 1));
  }
  if (!roster_.lost(s)) {
    return InvalidArgument(Rank(s) + "'s shard is not lost: " + Rank(by) +
                           "'s standby has nothing to claim");
  }
  if (hello.claim == wire::Claim::kNoCopy) {
    claims_.AddNoCopy(s, by);
    outbox_->Info(Rank(by) + "'s standby claims " + Rank(s) +
                  "'s shard without a copy of it: refused");
    DecideClaims(s);  // it was waited for
    return Unavailable(Rank(by) + "'s standby holds no copy of " + Rank(s) +
                       "'s shard: it cannot take it over");
  }
  claims_.Add(s, {peer.id, id, by, hello.version});
  outbox_->Info(Rank(by) + "'s standby claims " + Rank(s) +
                "'s shard at version " + std::to_string(hello.version));
  DecideClaims(s);
  return Status::Ok();
}

// Every standby of s on a rank rank 0 sees alive that has not claimed.
std::vector<int> Engine::AwaitedClaimants(int s) const {
  std::vector<int> awaited;
  for (int i = 1; i < spec_.replicas; ++i) {
    const int k = (s + i) % spec_.num_servers;
    if (k != s && roster_.alive(k) && !claims_.Heard(s, k))
      awaited.push_back(k);
  }
  return awaited;
}

void Engine::DecideClaims(int s, bool at_deadline) {
  if (stopping_ || !roster_.lost(s) || !claims_.Waiting(s))
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
  Peer* winner = peers_.Find(best.peer);  // a closed one's claim is withdrawn
  if (!winner)
    return;
  outbox_->Info(Rank(s) + "'s shard goes to " + Rank(best.claimant) +
                "'s standby, at version " + std::to_string(best.version) +
                " (the highest of " + std::to_string(claims.size()) +
                (claims.size() == 1 ? " claim" : " claims") + ")");
  Admit(*winner, wire::Role::kServer, s, best.claimant, best.request_id);
  for (size_t i = 1; i < claims.size(); ++i) {
    const ShardClaims::Claim& c = claims[i];
    if (Peer* p = peers_.Find(c.peer)) {
      Refuse(
          *p, c.request_id,
          Unavailable(Rank(best.claimant) +
                      "'s standby holds a later copy "
                      "of " +
                      Rank(s) + "'s shard (version " +
                      std::to_string(best.version) + ", " + Rank(c.claimant) +
                      "'s " + std::to_string(c.version) + ")"));
    }
  }
}

void Engine::DecideAllClaims() {
  for (int s = 1; s < spec_.num_servers; ++s)
    DecideClaims(s);
}

// Shard s is lost for good: no standby took it over, or none that did
// holds a copy of it.
Status Engine::ShardLost(int s) const {
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
