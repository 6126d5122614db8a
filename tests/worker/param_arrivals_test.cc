// ParamArrivals: waits end exactly when the keys they name are whole (all
// their slices, in any order), and never block once the exchange ended.

#include "worker/param_arrivals.h"

#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

namespace pstrain::worker {
namespace {

// Runs `wait` on a thread of its own.
struct Waiter {
  std::future<void> done;
  template <typename Fn>
  explicit Waiter(Fn wait) : done(std::async(std::launch::async, wait)) {}
  bool Done() {
    return done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }
};

// Until `n` threads are blocked in `arrivals`' waits.
void UntilWaiting(const ParamArrivals& arrivals, int n) {
  while (arrivals.waiting() < n)
    std::this_thread::yield();
}

TEST(ParamArrivalsTest, AKeyIsInOnceAllItsSlicesAreAndThoseBeforeIt) {
  ParamArrivals arrivals({1, 2, 1}, /*num_servers=*/2);
  for (int round = 0; round < 2; ++round) {
    arrivals.Begin();
    Waiter first([&] { arrivals.WaitKeys(1); });
    Waiter all([&] { arrivals.WaitKeys(3); });
    UntilWaiting(arrivals, 2);
    arrivals.OnSlice(2);  // the last key, before those it follows
    EXPECT_EQ(arrivals.waiting(), 2);
    arrivals.OnSlice(0);
    EXPECT_TRUE(first.Done());
    arrivals.OnSlice(1);  // one of key 1's two slices
    EXPECT_EQ(arrivals.waiting(), 1);
    arrivals.OnSlice(1);
    EXPECT_TRUE(all.Done());
    EXPECT_EQ(arrivals.waiting(), 0);
  }
}

TEST(ParamArrivalsTest, MetaNeedsEveryServer) {
  ParamArrivals arrivals({1}, /*num_servers=*/2);
  arrivals.Begin();
  arrivals.OnMeta();
  bool replied = false;
  Waiter waiter([&] { replied = arrivals.WaitMeta(); });
  UntilWaiting(arrivals, 1);
  arrivals.OnMeta();
  EXPECT_TRUE(waiter.Done());
  EXPECT_TRUE(replied);
}

TEST(ParamArrivalsTest, OpenAllReleasesEveryWaitAndSaysTheMetaIsMissing) {
  ParamArrivals arrivals({1, 1}, /*num_servers=*/1);
  arrivals.Begin();
  bool replied = true;
  Waiter meta([&] { replied = arrivals.WaitMeta(); });
  Waiter keys([&] { arrivals.WaitKeys(2); });
  UntilWaiting(arrivals, 2);
  arrivals.OpenAll();
  EXPECT_TRUE(meta.Done());
  EXPECT_TRUE(keys.Done());
  EXPECT_FALSE(replied);
  EXPECT_GT(arrivals.TakeWaitedSeconds(), 0.0);
  EXPECT_EQ(arrivals.TakeWaitedSeconds(), 0.0);
}

}  // namespace
}  // namespace pstrain::worker
