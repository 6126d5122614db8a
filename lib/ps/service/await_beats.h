#pragma once
// AwaitBeats: which peers wait on this server for a reply, and when each
// is due a heartbeat. A client gives up on a server it hears nothing from
// for --dead_after (net::Client::Await), which is how a worker or a
// standby finds a server that is stopped (SIGSTOP) or whose host went
// silent. A live server may hold a reply for longer than that (a sync step
// waits for a slow worker, a standby's next version is not made yet), so
// it tells a peer that waits that it is alive: a heartbeat frame (request
// id 0) at most every `interval`, while the peer's last request is later
// than our last reply. A peer that does not wait gets none, so a client
// that reads only while it waits (one computing, or one that only sends
// heartbeats itself, as a server to rank 0 does) has nothing piled up.
//
// Owns no I/O: the Service says what came in and went out, and sends the
// beats Due names. Threading: not thread-safe; the Service's thread only.

#include <chrono>
#include <unordered_map>
#include <vector>

#include "ps/engine/engine_clock.h"
#include "wire/frame.h"

namespace pstrain::ps {

class AwaitBeats {
 public:
  /// `dead_after`: the job's --dead_after, seconds; <= 0: no beats. A
  /// waiting peer hears from us at least every quarter of it, and at
  /// least every second.
  explicit AwaitBeats(double dead_after);
  /// The most time between beats for `dead_after` (> 0): a quarter of it,
  /// at most a second. Rank 0 hears servers as often (ServerBeats).
  static std::chrono::nanoseconds IntervalFor(double dead_after);

  /// Whether beats are sent at all.
  bool on() const { return interval_ > std::chrono::nanoseconds::zero(); }
  /// A frame of `type` came in from `peer` at `now`; a heartbeat is no
  /// request.
  void In(PeerId peer, wire::MsgType type, Time now);
  /// A frame (a reply) went to `peer` at `now`.
  void Out(PeerId peer, Time now);
  /// `peer` closed.
  void Forget(PeerId peer) { turns_.erase(peer); }
  /// Appends to `*due` the peers that wait on a reply and have heard
  /// nothing from us for `interval` at `now`; their beat counts as sent.
  void Due(Time now, std::vector<PeerId>* due);

  std::chrono::nanoseconds interval() const { return interval_; }

 private:
  struct Turn {
    Time asked{};     // its last request came in
    Time answered{};  // our last reply went
    Time beat{};      // our last heartbeat went
  };

  std::chrono::nanoseconds interval_{0};
  std::unordered_map<PeerId, Turn> turns_;
};

}  // namespace pstrain::ps
