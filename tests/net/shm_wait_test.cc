// ShmWaitPolicy: which phases a wait runs, from the yields it was told of
// (no clock, no threads).

#include "net/shm_wait.h"

#include <gtest/gtest.h>

namespace pstrain::net {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

constexpr microseconds kBusy{5}, kSpin{50};

TEST(ShmWaitPolicyTest, WithNothingKnownAWaitLooksBusyThenYieldsThenSleeps) {
  ShmWaitPolicy p(kBusy, kSpin);
  const ShmWaitPlan plan = p.Begin();
  EXPECT_EQ(plan.busy, kBusy);
  EXPECT_EQ(plan.spin, kSpin);
}

TEST(ShmWaitPolicyTest, QuickYieldsTeachNothing) {
  ShmWaitPolicy p(kBusy, kSpin);
  for (int i = 0; i < 100; ++i) {
    p.Begin();
    EXPECT_TRUE(p.Yielded(nanoseconds(200), false));
    EXPECT_TRUE(p.Yielded(nanoseconds(300), true));
  }
  EXPECT_EQ(p.Begin().busy, kBusy);
  EXPECT_FALSE(p.peer_on_our_core());
  EXPECT_FALSE(p.core_taken());
}

TEST(ShmWaitPolicyTest, ASwitchThatBroughtTheBytesDropsTheBusyLooks) {
  ShmWaitPolicy p(kBusy, kSpin);
  p.Begin();
  EXPECT_TRUE(p.Yielded(nanoseconds(200), false));  // the fastest: 0.2 us
  // 2 us is max(2 us, 8 x 0.2 us): the least that counts as a switch.
  EXPECT_TRUE(p.Yielded(nanoseconds(1999), true));
  EXPECT_EQ(p.Begin().busy, kBusy);
  EXPECT_TRUE(p.Yielded(microseconds(2), true));
  EXPECT_TRUE(p.peer_on_our_core());
  // The finding holds for kSharedWindow waits, counted from the one it was
  // made in; then the busy looks are tried again.
  for (uint32_t i = 1; i < ShmWaitPolicy::kSharedWindow; ++i) {
    const ShmWaitPlan plan = p.Begin();
    EXPECT_EQ(plan.busy, nanoseconds(0)) << i;
    EXPECT_EQ(plan.spin, kSpin) << i;
  }
  EXPECT_EQ(p.Begin().busy, kBusy);
}

TEST(ShmWaitPolicyTest, ASwitchThatBroughtNothingIsNotThePeer) {
  ShmWaitPolicy p(kBusy, kSpin);
  p.Begin();
  EXPECT_TRUE(p.Yielded(microseconds(20), false));
  EXPECT_FALSE(p.peer_on_our_core());
  EXPECT_EQ(p.Begin().busy, kBusy);
}

TEST(ShmWaitPolicyTest, AYieldThatTookTheWholeSpinSleepsNowAndAfter) {
  ShmWaitPolicy p(kBusy, kSpin);
  p.Begin();
  EXPECT_TRUE(p.Yielded(kSpin - nanoseconds(1), false));
  EXPECT_FALSE(p.core_taken());
  // Whether the bytes came meanwhile or not, the core was someone else's.
  EXPECT_FALSE(p.Yielded(kSpin, true));
  EXPECT_TRUE(p.core_taken());
  for (uint32_t i = 1; i < ShmWaitPolicy::kTakenWindow; ++i) {
    const ShmWaitPlan plan = p.Begin();
    EXPECT_EQ(plan.busy, nanoseconds(0)) << i;
    EXPECT_EQ(plan.spin, nanoseconds(0)) << i;
  }
  const ShmWaitPlan again = p.Begin();
  EXPECT_EQ(again.busy, kBusy);
  EXPECT_EQ(again.spin, kSpin);
}

TEST(ShmWaitPolicyTest, ASpinShorterThanTheBusyLooksIsTheBusyLooks) {
  ShmWaitPolicy p(microseconds(10), microseconds(3));
  const ShmWaitPlan plan = p.Begin();
  EXPECT_EQ(plan.busy, microseconds(10));
  EXPECT_EQ(plan.spin, microseconds(10));
}

}  // namespace
}  // namespace pstrain::net
