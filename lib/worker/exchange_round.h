#pragma once
// ExchangeRound: the state of a ServerGroup's exchanges with its servers:
// what the current one is (a pull or a push-pull), whether it is under
// way, which servers have answered it, and the version each server's last
// reply brought, which the next push-pull pushes gradients of. Reconnect
// reads it after a failed exchange: a server that answered is not asked
// again. Threading: the training thread starts and ends an exchange; while
// one is under way, server s's exchange thread alone calls Answer(s, ...),
// each on its own element (answered_ is of char, not bool, so that two
// threads never write one word).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pstrain::worker {

class ExchangeRound {
 public:
  /// What an exchange does with every server (ServerGroup::Exchange).
  enum class Kind { kPull, kPushPull };

  /// `servers` servers, each at version 0; none under way.
  void Reset(int servers);
  /// An exchange of kind `what` starts: none has answered yet.
  void Start(Kind what);
  /// The exchange under way, if any, is over; returns whether one was.
  bool End();

  /// The kind of the current (or last) exchange. Default: kPull.
  Kind kind() const { return kind_; }
  /// Server `s` answered with parameters of `version`.
  /// REQUIRES: s < the servers Reset gave.
  void Answer(int s, uint64_t version);
  /// Whether server `s` answered the current (or last) exchange; false
  /// before the first Start.
  bool answered(int s) const {
    return static_cast<size_t>(s) < answered_.size() && answered_[s] != 0;
  }
  /// Whether every server not in `lost` answered the current (or last)
  /// exchange: those in `lost` alone are to be asked again.
  bool AnsweredAllBut(const std::vector<int>& lost) const;
  /// The version of server `s`'s last reply; 0 before any.
  /// REQUIRES: s < the servers Reset gave.
  uint64_t version(int s) const { return versions_[s]; }

 private:
  Kind kind_ = Kind::kPull;
  bool under_way_ = false;
  std::vector<uint64_t> versions_;  // by server
  std::vector<char> answered_;      // by server
};

}  // namespace pstrain::worker
