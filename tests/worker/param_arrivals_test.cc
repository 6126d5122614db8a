// ParamArrivals: waits end exactly when the keys they name are whole (all
// their slices, in any order), and never block once the exchange ended.

#include "worker/param_arrivals.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace pstrain::worker {
namespace {

using std::chrono::milliseconds;

// Runs `wait` on a thread; `done` says whether it has returned.
struct Waiter {
  std::atomic<bool> done{false};
  std::thread thread;
  template <typename Fn>
  explicit Waiter(Fn wait) : thread([this, wait] { wait(); done = true; }) {}
  ~Waiter() { thread.join(); }
  bool DoneWithin(milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    return done;
  }
};

TEST(ParamArrivalsTest, AKeyIsInOnceAllItsSlicesAreAndThoseBeforeIt) {
  ParamArrivals arrivals({1, 2, 1}, /*num_servers=*/2);
  for (int round = 0; round < 2; ++round) {
    arrivals.Begin();
    Waiter first([&] { arrivals.WaitKeys(1); });
    Waiter all([&] { arrivals.WaitKeys(3); });
    EXPECT_FALSE(first.DoneWithin(milliseconds(20)));
    arrivals.OnSlice(2);  // the last key, before those it follows
    arrivals.OnSlice(0);
    EXPECT_TRUE(first.DoneWithin(milliseconds(5000)));
    arrivals.OnSlice(1);  // one of key 1's two slices
    EXPECT_FALSE(all.DoneWithin(milliseconds(20)));
    arrivals.OnSlice(1);
    EXPECT_TRUE(all.DoneWithin(milliseconds(5000)));
  }
}

TEST(ParamArrivalsTest, MetaNeedsEveryServer) {
  ParamArrivals arrivals({1}, /*num_servers=*/2);
  arrivals.Begin();
  arrivals.OnMeta();
  bool replied = false;
  Waiter waiter([&] { replied = arrivals.WaitMeta(); });
  EXPECT_FALSE(waiter.DoneWithin(milliseconds(20)));
  arrivals.OnMeta();
  EXPECT_TRUE(waiter.DoneWithin(milliseconds(5000)));
  EXPECT_TRUE(replied);
}

TEST(ParamArrivalsTest, OpenAllReleasesEveryWaitAndSaysTheMetaIsMissing) {
  ParamArrivals arrivals({1, 1}, /*num_servers=*/1);
  arrivals.Begin();
  bool replied = true;
  Waiter meta([&] { replied = arrivals.WaitMeta(); });
  Waiter keys([&] { arrivals.WaitKeys(2); });
  EXPECT_FALSE(keys.DoneWithin(milliseconds(20)));
  arrivals.OpenAll();
  EXPECT_TRUE(meta.DoneWithin(milliseconds(5000)));
  EXPECT_TRUE(keys.DoneWithin(milliseconds(5000)));
  EXPECT_FALSE(replied);
  EXPECT_GT(arrivals.TakeWaitedSeconds(), 0.0);
  EXPECT_EQ(arrivals.TakeWaitedSeconds(), 0.0);
}

}  // namespace
}  // namespace pstrain::worker
