#pragma once
// PeerWatch: the Engine's watch over time (share/doc/design.md, "The
// Engine's parts"): when the job last made progress (--timeout), which
// peers never finished their handshake, which registered workers have
// been silent for --dead_after, and how late a tick came. A tick later
// than it should be means the Engine's thread was busy with something of
// its own (or the process was held up), and the frames that came in
// meanwhile are still unread: that time is nobody's silence, so it is
// credited to every peer and to the job's progress.
//
// Threading: not thread-safe; the Engine's thread only.

#include <chrono>
#include <vector>

#include "ps/engine/engine_clock.h"

namespace pstrain::ps {

class PeerTable;
struct WorkerPeer;

class PeerWatch {
 public:
  /// How often the Engine is ticked.
  static constexpr std::chrono::milliseconds kTick{200};

  /// `timeout`: how long the job may make no progress, and how long a peer
  /// may take for its handshake. `dead_after`: seconds a worker may be
  /// silent while a step waits on it; <= 0: forever.
  PeerWatch(std::chrono::milliseconds timeout, double dead_after);

  /// The job's clock starts at `now`.
  void Start(Time now);
  /// The job made progress at `now` (a push, a version, a registration).
  void Progress(Time now) { last_progress_ = now; }
  /// A tick at `now`. When it is later than two ticks after the last one,
  /// its lateness less one tick is added to every peer's last_heard and
  /// accepted_at, and to the last progress.
  void Tick(Time now, PeerTable* peers);
  /// Whether the job has made no progress for longer than the timeout.
  bool TimedOut(Time now) const { return now - last_progress_ > timeout_; }
  /// Appends to `*late` the peers still before their hello, not closing,
  /// accepted longer than the timeout ago.
  void LateHandshakes(const PeerTable& peers, Time now,
                      std::vector<PeerId>* late) const;
  /// Whether registered worker `peer` (not closing) has sent nothing for
  /// longer than --dead_after. A batch it has the server compute
  /// (--placement server), or a reply the server holds (`reply_held`: for
  /// the other workers, or until its standbys hold the version), is the
  /// server's time, not the worker's: false then, as always with no
  /// --dead_after.
  /// (A host that goes silent meanwhile is found by the kernel:
  /// net::WatchPeerHost.)
  bool Silent(const WorkerPeer& peer, bool reply_held, Time now) const;

  std::chrono::milliseconds timeout() const { return timeout_; }
  double dead_after() const { return dead_after_; }

 private:
  std::chrono::milliseconds timeout_;
  double dead_after_;
  Time last_tick_{};
  Time last_progress_{};
};

}  // namespace pstrain::ps
