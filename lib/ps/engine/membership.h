#pragma once
// Membership: the one owner of who trains in a job. One record per worker
// (worker index w is rank num_servers + w): its registered connection, and
// whether it is done (sent done) or lost (its connection closed, or silent
// for --dead_after; it may rejoin); with what it reported when done, and
// the seconds the server held its replies for the other workers. The
// done and lost counts are counted from these records.
//
// It is a record, and acts on nothing: the StepDriver (step_driver.h) is
// what takes a worker out of the step's quorum and puts it back (it tells
// the update rule, after the WriteFence), and the Engine tells the
// ReplyDesk's SspGate who trains. Nothing else keeps its own copy of who
// trains.
//
// Threading: not thread-safe; the Engine's thread only. It borrows each
// worker's WorkerPeer from Register until Disconnect.

#include <vector>

#include "ps/engine/engine_clock.h"
#include "report/worker_stats.h"
#include "util/result.h"

namespace pstrain::ps {

struct WorkerPeer;

class Membership {
 public:
  /// `num_servers`: the first worker's rank.
  Membership(int num_servers, int num_workers);
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  /// Workers in the job, by worker index 0..num_workers()-1.
  int num_workers() const { return static_cast<int>(workers_.size()); }
  /// Worker w's registered connection; null before register, after its
  /// connection closed, and while lost.
  WorkerPeer* peer(int w) const { return workers_[w].peer; }
  /// Whether worker w sent done.
  bool done(int w) const { return workers_[w].done; }
  /// Whether worker w is lost now (it may rejoin).
  bool lost(int w) const { return workers_[w].lost; }
  /// Whether worker w is in the step's quorum: every worker at first; out
  /// once Remove took it out, back when it rejoins.
  bool in_quorum(int w) const { return workers_[w].in_quorum; }
  /// kInvalidArgument "push from a worker that is not a member" unless
  /// in_quorum(w).
  Status CheckMember(int w) const;
  /// Workers in the step's quorum.
  int quorum() const;

  /// Whether w may register: it has no registered connection and is not
  /// done. Else kInvalidArgument naming its rank.
  Status CheckRegister(int w) const;
  /// A lost worker registers again: it is back in the quorum (the rule
  /// hears of it from the StepDriver). REQUIRES: lost(w), CheckRegister(w)
  /// ok.
  void Rejoin(int w);
  /// Worker w's connection `peer` registered at `now` (after Rejoin, if it
  /// was lost). REQUIRES: CheckRegister(w) ok, !lost(w).
  void Register(int w, WorkerPeer* peer, Time now);
  /// Worker w is lost; LeaveQuorum takes it out of the quorum. REQUIRES:
  /// registered, not done, not lost.
  void Lose(int w);
  /// Worker w finished at `now`: `stats` are what it reported, and
  /// `waiting_seconds` how long the server held its replies.
  /// REQUIRES: registered, not done.
  void Finish(int w, report::WorkerStats stats, double waiting_seconds,
              Time now);
  /// Takes w out of the step's quorum; returns false when it was no
  /// member.
  bool LeaveQuorum(int w);
  /// Worker w's connection `peer` closed: w has no connection (unless it
  /// registered again on another one meanwhile).
  void Disconnect(int w, const WorkerPeer* peer);

  /// Workers that ever registered, rejoins included.
  int registered() const { return registered_; }
  /// Workers done.
  int done_count() const;
  /// Workers lost now (they may still rejoin).
  int lost_count() const;
  /// Seconds the server held replies so far, summed over the done workers
  /// and those training now.
  double waiting_seconds_now() const;
  /// Workers registered now: neither done nor lost.
  int live_count() const;
  /// Losses so far (a rank lost twice counts twice).
  uint64_t losses() const { return losses_; }
  /// Every worker is done or lost, and at least one is done: the run's
  /// training is over.
  bool finished() const;
  /// What each done worker reported, in the order they finished.
  const std::vector<report::WorkerStats>& stats() const { return stats_; }
  /// Seconds the server held the done workers' replies, summed.
  double waiting_seconds() const { return waiting_seconds_; }
  /// When the first worker registered: where wall_seconds start.
  Time first_register() const { return first_register_; }
  /// When the last worker finished.
  Time last_done() const { return last_done_; }

 private:
  struct Worker {
    WorkerPeer* peer = nullptr;
    bool done = false;
    bool lost = false;
    bool in_quorum = true;
  };

  int num_servers_;
  std::vector<Worker> workers_;  // by worker index
  std::vector<report::WorkerStats> stats_;
  double waiting_seconds_ = 0;
  int registered_ = 0;
  uint64_t losses_ = 0;
  Time first_register_{};
  Time last_done_{};
};

}  // namespace pstrain::ps
