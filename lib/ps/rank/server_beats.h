#pragma once
// ServerBeats: a serving server's heartbeats to rank 0 (the master), and
// its ear for rank 0's word while it serves. Rank 0 watches every server
// that beats and fences one it hears nothing from for --dead_after
// (MasterDesk::FenceSilent): a stopped process (SIGSTOP) or a host cut off
// answers TCP's probes from its kernel, so only its own silence tells.
// Each beat first reads what rank 0 sent: a fenced server finds rank 0's
// line naming its old term there when it runs again, and must not serve
// one more reply, since its standby serves the shard now. A failed beat
// (that line, or rank 0 gone) calls `on_end` once, and the beats stop;
// but where rank 0 may be succeeded (ps/rank/succession.h), a master that
// is gone without a word is first rejoined where its successor will be.
//
// Threading: beats on a thread of its own, the one user of the
// MasterClient from construction to destruction.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "util/status.h"

namespace pstrain::report {
class EventLog;
}

namespace pstrain::ps {

class MasterClient;

class ServerBeats {
 public:
  /// Beats `master` (MasterClient::Beat) at AwaitBeats::IntervalFor(
  /// `dead_after`) until destroyed or a beat fails; then `on_end(why)`, on
  /// the beats' thread. `dead_after` <= 0 (--dead_after off): no beats.
  /// `rejoin` set: a beat that fails without the master's refusal calls it
  /// (MasterClient::Rejoin), and the beats go on when it succeeds; so does
  /// a beat that finds `moved` true (the arbiter names another master: a
  /// stopped one takes the beats' bytes without a word).
  ServerBeats(double dead_after, MasterClient* master,
              std::function<void(const Status&)> on_end,
              std::function<Status()> rejoin = nullptr,
              std::function<bool()> moved = nullptr);
  /// Stops the thread at once; `master` is the caller's again.
  ~ServerBeats();
  ServerBeats(const ServerBeats&) = delete;
  ServerBeats& operator=(const ServerBeats&) = delete;

  /// Why the beats ended: ok while they go on.
  Status ended() const;
  /// Ok while the beats go on (or there are none); else why they ended,
  /// as server `rank`'s reason to stop serving.
  Status Serving(int rank) const;

 private:
  void Run(std::chrono::nanoseconds interval, MasterClient* master,
           const std::function<void(const Status&)>& on_end,
           const std::function<Status()>& rejoin,
           const std::function<bool()>& moved);

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  Status ended_;
  std::thread thread_;
};

/// Ends this process at once with `why` (rank 0's word, on a term that
/// ended) as its error line and exit status 1, without waiting for its
/// standbys' threads: a fenced rank must answer no one, whether the term
/// was its own shard's or one it took over, and its standbys' copies were
/// dropped meanwhile; launch --restart_servers starts it again as a
/// standby.
[[noreturn]] void ExitFenced(const Status& why, report::EventLog* log);

}  // namespace pstrain::ps
