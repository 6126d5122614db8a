#pragma once
// Observer: rank 0's evaluations and periodic checkpoints, off the
// critical path. At the versions --eval_interval and --checkpoint_every
// name, it gets version v of every slice the way a worker would: its own
// from the Service (a Snapshot copied when v is made) and the other
// servers' by asking each for its snapshot of v (SnapshotClient). It then
// saves that whole model, and scores it on a thread of its own at the
// lowest scheduling priority, while training goes on; the eval event names
// v.
// With --target_accuracy, the first evaluation that reaches it stops the
// run (Service::StopTraining) and its snapshot becomes the checkpoint.
//
// A plan is a version to snapshot, to score or save or both. Its snapshots
// are gathered at once and saved on one thread (it mostly waits and
// writes), and scored in order on another, at the lowest priority, so a
// slow evaluation delays the next evaluation, never a step, a snapshot or
// a checkpoint. At most
// kMaxPlans plans are under way; while that many are, a due one waits for
// a later version. Those left when training ends are worked off at full
// speed. With several servers a snapshot is asked for the update rule's
// snapshot_lead versions ahead (ps/rules/update_rule.h, RuleTraits), so that no
// server has passed it when asked; where the rule has the servers' versions
// agree, one whose servers answer other versions is skipped (logged).
//
// Threading: OnVersion runs on the Service's io thread; Finish and target()
// on the thread that ran the Service, after Run. `*service`, `*io`, `*log`
// and `*plan` must outlive the Observer.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "models/evaluator.h"
#include "net/connection.h"
#include "ps/job/interval.h"
#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"
#include "ps/rank/snapshot_client.h"
#include "ps/service/service.h"
#include "report/event_log.h"

namespace pstrain::trace {
class Timeline;
}  // namespace pstrain::trace

namespace pstrain::ps {

/// Scores a whole model's state (every parameter and buffer by name): the
/// evaluator, or a test's stand-in. Called on one thread at a time.
using ScoreFn =
    std::function<Result<models::EvalResult>(const models::NamedTensors&)>;

struct ObserverOptions {
  /// When to evaluate: the job's --eval_interval. Empty: never during
  /// training.
  Interval eval;
  /// When to save a versioned checkpoint beside `checkpoint`
  /// (--checkpoint_every,
  /// --keep). Empty: never.
  Interval checkpoint_every;
  std::string checkpoint;
  int keep = 3;
  /// Names the checkpoints also give a key under (models::StateAliases).
  std::vector<std::pair<std::string, std::string>> aliases;
  /// Compute threads of the Observer's thread. Default: 1.
  int threads = 1;
  /// Score at the lowest priority (models::LowerThisThreadsPriority),
  /// on cores training leaves idle: evaluation then costs training nothing
  /// but may fall behind it. Off, evaluation competes with training as an
  /// equal and keeps up. Default: true.
  bool low_priority = true;
  /// How long another server may take to answer, and connection options
  /// and token for asking it.
  std::chrono::milliseconds timeout{120000};
  net::ConnectionOptions connection;
  std::string auth_token;
  /// --timeline: spans of each gather, checkpoint and evaluation; it must
  /// outlive the Observer. nullptr (the default): none.
  trace::Timeline* timeline = nullptr;
};

/// The whole model at one version, from every server's snapshot.
struct WholeSnapshot {
  uint64_t version = 0;
  /// Every parameter and buffer, whole, by name (models::ModelState order).
  models::NamedTensors state;
  /// Each server's optimizer state (SerializeOptimizerState bytes), by
  /// server; empty strings unless the plan saves or may stop at a target.
  std::vector<std::string> optimizer_states;
  /// When rank 0 made the version.
  std::chrono::steady_clock::time_point made_at;
};

/// The first evaluation that reached --target_accuracy.
struct TargetReached {
  uint64_t version = 0;
  models::EvalResult result;
  std::shared_ptr<const WholeSnapshot> snapshot;  // with optimizer states
};

class Observer {
 public:
  /// Plans under way at most (snapshots held: one whole model each).
  static constexpr int kMaxPlans = 4;

  /// `named_params`: the whole model's parameters, by name, whose shapes
  /// and dtypes snapshots take (their values are not read). `start`: the
  /// version the run starts from. Starts the Observer's thread when it has
  /// anything to do (an interval, or a target).
  Observer(ObserverOptions options, const JobSpec& spec, const ShardPlan* plan,
           models::NamedTensors named_params, ScoreFn score, Service* service,
           asio::io_context* io, report::EventLog* log, uint64_t start);
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  /// After each new version, on the io thread: starts a plan if one is due
  /// and none is in flight.
  void OnVersion(uint64_t version);

  /// After Service::Run: works off the plans under way with every core (one
  /// whose version was never made is dropped) and joins the threads.
  /// Idempotent.
  void Finish();

  /// After Finish: the evaluation that reached the target, if one did.
  const std::optional<TargetReached>& target() const { return target_; }
  /// After Finish: the best test accuracy of the evaluations so far (-1:
  /// none).
  double best_accuracy() const { return best_accuracy_; }

 private:
  struct Plan {
    uint64_t version = 0;
    bool eval = false;
    bool checkpoint = false;
    bool optimizer_states = false;
    std::vector<std::string> addresses;  // by server; [0] unused
    bool local_in = false;  // rank 0's snapshot came (guarded by mu_)
    std::shared_ptr<const Snapshot> local;
  };
  struct Work {
    std::shared_ptr<Plan> plan;
    std::shared_ptr<WholeSnapshot> whole;
  };

  void GatherLoop();
  void WorkLoop();
  std::shared_ptr<WholeSnapshot> Gather(Plan& plan);
  Status FetchRemote(const Plan& plan, int server, WholeSnapshot* whole,
                     uint64_t* version);
  std::shared_ptr<const Snapshot> AwaitLocal(Plan& plan);
  void Evaluate(const std::shared_ptr<WholeSnapshot>& whole);
  void SaveCheckpoint(const WholeSnapshot& whole);

  const ObserverOptions options_;
  const JobSpec spec_;
  const ShardPlan* plan_;
  models::NamedTensors named_params_;
  ScoreFn score_;
  Service* service_;
  asio::io_context* io_;
  report::EventLog* log_;

  // The io thread's.
  IntervalSchedule eval_schedule_;
  IntervalSchedule checkpoint_schedule_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Plan>> to_gather_;
  std::deque<Work> to_work_;
  int under_way_ = 0;      // plans issued and not yet worked off
  bool stopping_ = false;  // Finish was called
  bool gathered_ = false;  // the gathering thread has ended

  // The gathering thread's.
  std::vector<std::unique_ptr<SnapshotClient>> clients_;  // by server
  // The working thread's (read by Finish's caller once it has joined).
  std::optional<TargetReached> target_;
  double best_accuracy_ = -1;
  std::thread gather_thread_, work_thread_;
};

}  // namespace pstrain::ps
