#include "net/shm_wait.h"

#include <algorithm>

namespace pstrain::net {

namespace {

struct AtomicCounts {
  std::atomic<uint64_t> ops{0}, looks{0}, yields{0}, sleeps{0};
};

AtomicCounts& Totals(bool server_end) {
  static AtomicCounts totals[2];
  return totals[server_end ? 1 : 0];
}

}  // namespace

ShmWaitPolicy::ShmWaitPolicy(std::chrono::nanoseconds busy,
                             std::chrono::nanoseconds spin)
    : busy_(busy), spin_(std::max(busy, spin)) {}

ShmWaitPlan ShmWaitPolicy::Begin() {
  ++waits_;
  if (core_taken())
    return {};  // sleep at once (see the header)
  if (peer_on_our_core())
    return {std::chrono::nanoseconds(0), spin_};
  return {busy_, spin_};
}

bool ShmWaitPolicy::Yielded(std::chrono::nanoseconds took, bool found) {
  fastest_yield_ = std::min(fastest_yield_, took);
  if (took >= spin_) {
    // Held off our core for the whole spin: whoever had it, yielding
    // waits for them, and a doorbell would have preempted them.
    taken_until_ = waits_ + kTakenWindow;
    return false;
  }
  // A yield that returned at once costs a system call; one that ran
  // another thread costs two context switches, far more.
  const auto switched = std::max<std::chrono::nanoseconds>(
      std::chrono::microseconds(2), 8 * fastest_yield_);
  if (took >= switched && found)
    shared_until_ = waits_ + kSharedWindow;
  return true;
}

ShmWaitCounts ShmWaitTotals(bool server_end) {
  const AtomicCounts& t = Totals(server_end);
  return {t.ops.load(std::memory_order_relaxed),
          t.looks.load(std::memory_order_relaxed),
          t.yields.load(std::memory_order_relaxed),
          t.sleeps.load(std::memory_order_relaxed)};
}

void AddShmWaitTotals(bool server_end, const ShmWaitCounts& c) {
  AtomicCounts& t = Totals(server_end);
  t.ops.fetch_add(c.ops, std::memory_order_relaxed);
  t.looks.fetch_add(c.looks, std::memory_order_relaxed);
  t.yields.fetch_add(c.yields, std::memory_order_relaxed);
  t.sleeps.fetch_add(c.sleeps, std::memory_order_relaxed);
}

}  // namespace pstrain::net
