#pragma once
// How a shared-memory end waits for its peer. A wait looks at the ring
// without yielding for a while ("busy"), then yields the core between
// looks until its spin runs out, then sleeps on its doorbell
// (net/shm_stream.h). Which of the three pays depends on where the peer
// runs, and ShmWaitPolicy learns it from what each yield costs:
// - alone on a core, a yield returns at once (a system call, ~0.2 us);
// - when the peer shares our core, a yield runs the peer until it waits
//   in its turn, and what we wait for is there after it: a look that does
//   not yield can never see it, so waits skip the busy looks;
// - when another thread holds the core, a yield may not return for a
//   scheduler slice (milliseconds under a CPU load): a yield that took the
//   whole spin says so, and waits sleep at once instead: a doorbell's
//   wake-up can preempt that thread where a yield waits for it, and every
//   look spent spinning counts against our share of the core.
// Each finding holds for a number of waits, then the default plan is
// tried again. Spin-then-block, with the choice made from what waiting
// cost before, is the scheme of Karlin, Li, Manasse and Owicki,
// "Empirical Studies of Competitive Spinning for a Shared-Memory
// Multiprocessor" (SOSP 1991), sections 2 and 3; here what is learnt is
// which phases run, not the spin's length.
//
// The counts of each way of waiting are summed per process, by end, so
// that `bench wire` can say where a small operation's time goes.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace pstrain::net {

/// Counts of reads and writes: one operation's, or a process's ends'.
struct ShmWaitCounts {
  uint64_t ops = 0;     // reads and writes completed
  uint64_t looks = 0;   // looks at the ring after the first that found nothing
  uint64_t yields = 0;  // looks that gave the core away first (sched_yield)
  uint64_t sleeps = 0;  // sleeps on a doorbell (one epoll wake-up each)

  ShmWaitCounts& operator+=(const ShmWaitCounts& o) {
    ops += o.ops;
    looks += o.looks;
    yields += o.yields;
    sleeps += o.sleeps;
    return *this;
  }
};

/// How long one wait looks before it sleeps.
struct ShmWaitPlan {
  std::chrono::nanoseconds busy{0};  // looks without yielding
  std::chrono::nanoseconds spin{0};  // all looks (busy ones included)
};

/// One end's and one direction's choice of plan, from the yields it saw.
/// No clock: the caller says how long each yield took. Not thread-safe
/// (one per operation kind of a stream, used on its thread).
class ShmWaitPolicy {
 public:
  /// How many waits a finding holds for: the peer on our core, and our
  /// core taken (longer: trying again may lose a scheduler slice).
  static constexpr uint32_t kSharedWindow = 64;
  static constexpr uint32_t kTakenWindow = 1024;

  /// `busy` and `spin`: the plan when nothing is known (spin >= busy).
  ShmWaitPolicy(std::chrono::nanoseconds busy, std::chrono::nanoseconds spin);

  /// A wait begins (its first look found nothing): its plan.
  ShmWaitPlan Begin();
  /// A yield of the current wait took `took`; `found`: the look after it
  /// moved bytes. Returns whether to go on looking (false: sleep now).
  bool Yielded(std::chrono::nanoseconds took, bool found);

  /// Whether the peer was last found on our core (no busy looks).
  bool peer_on_our_core() const { return waits_ < shared_until_; }
  /// Whether another thread was last found holding our core (no yields).
  bool core_taken() const { return waits_ < taken_until_; }

 private:
  std::chrono::nanoseconds busy_, spin_;
  std::chrono::nanoseconds fastest_yield_ = std::chrono::nanoseconds::max();
  uint64_t waits_ = 0;
  uint64_t shared_until_ = 0;
  uint64_t taken_until_ = 0;
};

/// The counts of every stream of this process whose end is the server's
/// (`server_end`) or the worker's, since the process began.
/// Thread-safe.
ShmWaitCounts ShmWaitTotals(bool server_end);
/// Adds one operation's counts to the process's; thread-safe.
void AddShmWaitTotals(bool server_end, const ShmWaitCounts& counts);

}  // namespace pstrain::net
