#include "net/shm_wait.h"

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
