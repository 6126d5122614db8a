#pragma once
// How a shared-memory end waited for its peer: the counts of each way of
// waiting, kept per stream and summed per process, so that `bench wire`
// can say where a small operation's time goes (a look that found nothing,
// a look that yielded the core first, a sleep on the doorbell).

#include <atomic>
#include <cstdint>

namespace pstrain::net {

/// Counts of one stream's (or one process's) reads and writes.
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

/// The counts of every stream of this process whose end is the server's
/// (`server_end`) or the worker's, since the process began.
/// Thread-safe.
ShmWaitCounts ShmWaitTotals(bool server_end);
/// Adds one operation's counts to the process's; thread-safe.
void AddShmWaitTotals(bool server_end, const ShmWaitCounts& counts);

}  // namespace pstrain::net
