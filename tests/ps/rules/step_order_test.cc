// StepOrder: which keys of a sync step are stepped, in what order they go,
// and the prefix replies may send.

#include "ps/rules/step_order.h"

#include <gtest/gtest.h>

namespace pstrain::ps {
namespace {

TEST(StepOrderTest, StartsInKeyOrderWithNothingStepped) {
  StepOrder o(3);
  EXPECT_EQ(o.keys(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(o.Mark(2), 3u);
  EXPECT_TRUE(o.idle());
  EXPECT_EQ(o.prefix(), 0u);
  EXPECT_EQ(o.Next(), -1);  // not closed
}

TEST(StepOrderTest, SetTakesOnlyAPermutation) {
  StepOrder o(3);
  EXPECT_FALSE(o.Set({0, 1}));
  EXPECT_FALSE(o.Set({0, 1, 1}));
  EXPECT_FALSE(o.Set({0, 1, 3}));
  EXPECT_EQ(o.keys(), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(o.Set({2, 0, 1}));
  EXPECT_EQ(o.Mark(2), 1u);
  EXPECT_EQ(o.Mark(0), 2u);
  EXPECT_EQ(o.Mark(1), 3u);
}

TEST(StepOrderTest, PrefixCountsOnlySteppedKeysAtTheFront) {
  StepOrder o(4);
  ASSERT_TRUE(o.Set({3, 2, 1, 0}));
  o.UpdateAhead(2);  // second in order: the front is not stepped yet
  EXPECT_EQ(o.prefix(), 0u);
  EXPECT_TRUE(o.stepped(2));
  EXPECT_FALSE(o.idle());
  o.UpdateAhead(3);
  EXPECT_EQ(o.prefix(), 2u);
  EXPECT_EQ(o.ahead_count(), 2);
}

TEST(StepOrderTest, AfterTheCloseNextSkipsKeysSteppedAhead) {
  StepOrder o(4);
  ASSERT_TRUE(o.Set({3, 2, 1, 0}));
  o.UpdateAhead(3);
  o.UpdateAhead(1);
  o.Close();
  EXPECT_TRUE(o.closed());
  EXPECT_EQ(o.Next(), 2);
  EXPECT_EQ(o.prefix(), 3u);  // 3, 2 and 1
  EXPECT_EQ(o.Next(), 0);
  EXPECT_EQ(o.prefix(), 4u);
  EXPECT_FALSE(o.idle());  // until Next says none is left
  EXPECT_EQ(o.Next(), -1);
  EXPECT_TRUE(o.idle());
  EXPECT_EQ(o.prefix(), 0u);
  EXPECT_FALSE(o.stepped(3));
}

TEST(StepOrderTest, EveryKeySteppedAheadLeavesNothingAfterTheClose) {
  StepOrder o(2);
  o.UpdateAhead(0);
  o.UpdateAhead(1);
  EXPECT_EQ(o.prefix(), 2u);
  o.Close();
  EXPECT_EQ(o.Next(), -1);
  EXPECT_TRUE(o.idle());
}

TEST(StepOrderTest, DiscardKeepsNoKeyWaiting) {
  StepOrder o(3);
  o.UpdateAhead(0);
  o.Discard();
  EXPECT_TRUE(o.idle());
  EXPECT_FALSE(o.stepped(0));
  EXPECT_EQ(o.Next(), -1);
}

}  // namespace
}  // namespace pstrain::ps
