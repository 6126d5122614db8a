#include "ps/engine/shard_claims.h"

#include <algorithm>

namespace pstrain::ps {

void ShardClaims::Add(int s, const Claim& claim) {
  shards_[s].waiting.push_back(claim);
}

void ShardClaims::AddNoCopy(int s, int claimant) {
  std::vector<int>& ranks = shards_[s].no_copy;
  if (std::find(ranks.begin(), ranks.end(), claimant) == ranks.end())
    ranks.push_back(claimant);
}

void ShardClaims::Withdraw(PeerId peer) {
  for (auto& [s, shard] : shards_) {
    auto& w = shard.waiting;
    w.erase(std::remove_if(w.begin(), w.end(),
                           [peer](const Claim& c) { return c.peer == peer; }),
            w.end());
  }
}

bool ShardClaims::Heard(int s, int claimant) const {
  const auto it = shards_.find(s);
  if (it == shards_.end())
    return false;
  const Shard& shard = it->second;
  return std::any_of(
             shard.waiting.begin(), shard.waiting.end(),
             [claimant](const Claim& c) { return c.claimant == claimant; }) ||
         std::find(shard.no_copy.begin(), shard.no_copy.end(), claimant) !=
             shard.no_copy.end();
}

bool ShardClaims::Waiting(int s) const {
  const auto it = shards_.find(s);
  return it != shards_.end() && !it->second.waiting.empty();
}

bool ShardClaims::Claiming(PeerId peer) const {
  for (const auto& [s, shard] : shards_) {
    for (const Claim& c : shard.waiting) {
      if (c.peer == peer)
        return true;
    }
  }
  return false;
}

std::vector<ShardClaims::Claim> ShardClaims::Take(int s) {
  const auto it = shards_.find(s);
  if (it == shards_.end())
    return {};
  std::vector<Claim> claims = std::move(it->second.waiting);
  shards_.erase(it);
  std::stable_sort(
      claims.begin(), claims.end(),
      [](const Claim& a, const Claim& b) { return a.version > b.version; });
  return claims;
}

std::vector<int> ShardClaims::NoCopy(int s) const {
  const auto it = shards_.find(s);
  return it == shards_.end() ? std::vector<int>{} : it->second.no_copy;
}

}  // namespace pstrain::ps
