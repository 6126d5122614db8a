#pragma once
// ShardClaims: rank 0's record of the claims on a lost shard (--replicas;
// ps/rank/standby.h). When server s dies, each of its standbys says hello
// as rank s with the version its copy holds (wire::Hello's claim), or that
// it holds none. Rank 0 holds each claim with a copy unanswered until it
// can choose the highest: a claim that came first must not win while a
// standby that may hold a later version has yet to claim, or a version
// workers have seen would go back. The Engine decides when that is
// (Engine::DecideClaims); this part keeps the claims and orders them.
//
// Threading: not thread-safe; the Engine's thread only.

#include <cstdint>
#include <map>
#include <vector>

#include "ps/engine/engine_clock.h"

namespace pstrain::ps {

class ShardClaims {
 public:
  /// One standby's claim with a copy, waiting for rank 0's answer.
  struct Claim {
    PeerId peer = 0;
    uint64_t request_id = 0;  // of its hello, which the answer names
    int claimant = -1;        // the standby's own server rank
    uint64_t version = 0;     // the version its copy holds
  };

  /// Holds `claim` of server s's shard until Take.
  void Add(int s, const Claim& claim);
  /// Rank `claimant`'s standby of s claimed it without a copy (refused).
  void AddNoCopy(int s, int claimant);
  /// `peer` closed: its waiting claim, if any, is withdrawn.
  void Withdraw(PeerId peer);
  /// Whether rank `claimant`'s standby of s has claimed it since s was
  /// lost, with a copy (waiting) or without one.
  bool Heard(int s, int claimant) const;
  /// Whether some claim of s with a copy waits.
  bool Waiting(int s) const;
  /// Whether `peer`'s claim waits.
  bool Claiming(PeerId peer) const;
  /// s's waiting claims, the highest version first (among equal versions
  /// the earliest), and forgets s.
  std::vector<Claim> Take(int s);
  /// The ranks whose standbys claimed s without a copy, in their order.
  std::vector<int> NoCopy(int s) const;

 private:
  struct Shard {
    std::vector<Claim> waiting;  // in the order they came
    std::vector<int> no_copy;
  };
  std::map<int, Shard> shards_;
};

}  // namespace pstrain::ps
