// Heartbeats: a beat that could not tell everyone is tried again soon,
// and a told beat waits for the next interval.

#include "worker/heartbeats.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::worker {
namespace {

using std::chrono::milliseconds;

TEST(HeartbeatsTest, AnUntoldBeatIsRetriedUntilTold) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> calls;  // each call's `again`
  {
    // Retries are 1 ms apart, the next beat 300 ms later: the first
    // three calls are one beat's.
    Heartbeats beats(
        milliseconds(300),
        [&](bool again) {
          std::lock_guard<std::mutex> lock(mu);
          calls.push_back(again);
          cv.notify_all();
          return calls.size() >= 3;
        },
        milliseconds(1));
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30),
                            [&] { return calls.size() >= 3; }));
  }
  ASSERT_GE(calls.size(), 3u);
  EXPECT_FALSE(calls[0]);
  EXPECT_TRUE(calls[1]);
  EXPECT_TRUE(calls[2]);
  for (size_t i = 3; i < calls.size(); ++i)
    EXPECT_FALSE(calls[i]) << "a told beat was retried";
}

}  // namespace
}  // namespace pstrain::worker
