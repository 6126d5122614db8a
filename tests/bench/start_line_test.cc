#include "bench/start_line.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::bench {
namespace {

// No worker passes a round before the last one arrives, round after round.
TEST(StartLineTest, ReleasesEachRoundOnlyOnceAllHaveArrived) {
  constexpr int kWorkers = 3, kRounds = 4;
  StartLine line(kWorkers);
  std::atomic<int> arrived{0};
  std::vector<int> seen(kWorkers * kRounds, -1);  // arrivals seen on release
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < kRounds; ++round) {
        // The last worker is late every round: it arrives once the others
        // are blocked.
        if (w == kWorkers - 1) {
          while (line.waiting() < kWorkers - 1)
            std::this_thread::yield();
        }
        arrived.fetch_add(1);
        EXPECT_TRUE(line.Arrive());
        seen[round * kWorkers + w] = arrived.load();
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (int round = 0; round < kRounds; ++round) {
    for (int w = 0; w < kWorkers; ++w) {
      EXPECT_GE(seen[round * kWorkers + w], (round + 1) * kWorkers)
          << "worker " << w << " passed round " << round << " early";
    }
  }
}

// A failed worker never arrives: the others are released, and told so.
TEST(StartLineTest, FailReleasesTheWaitingAndLaterArrivals) {
  StartLine line(3);
  std::atomic<int> released{0};
  std::thread waiter([&] {
    EXPECT_FALSE(line.Arrive());
    released.fetch_add(1);
  });
  while (line.waiting() < 1)
    std::this_thread::yield();
  EXPECT_EQ(released.load(), 0);
  line.Fail();
  waiter.join();
  EXPECT_EQ(released.load(), 1);
  EXPECT_FALSE(line.Arrive());
}

TEST(StartLineTest, OneWorkerNeverWaits) {
  StartLine line(1);
  EXPECT_TRUE(line.Arrive());
  EXPECT_TRUE(line.Arrive());
}

}  // namespace
}  // namespace pstrain::bench
