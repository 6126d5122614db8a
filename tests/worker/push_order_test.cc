// PushOrder: pushes list dense gradients by ascending mark, or in key
// order when tagged (--priority, gated, no rows); row keys are left out.

#include "worker/push_order.h"

#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::worker {
namespace {

using OrderKeys = std::vector<uint32_t>;

TEST(PushOrderTest, ListsKeysByAscendingMarkStably) {
  PushOrder order;
  order.Reset(4);
  order.SetMarks({2, 0, 2, 1});
  order.Plan(/*gated=*/true, /*rows=*/false);
  EXPECT_EQ(order.order(), (OrderKeys{1, 3, 0, 2}));
  EXPECT_EQ(order.mark(0), 2u);
  EXPECT_EQ(order.mark(3), 1u);
}

TEST(PushOrderTest, PadsOrCutsMarksToTheKeys) {
  PushOrder order;
  order.Reset(3);
  order.SetMarks({5});
  EXPECT_EQ(order.mark(0), 5u);
  EXPECT_EQ(order.mark(2), 0u);
  order.SetMarks({1, 2, 3, 4});
  order.Plan(false, false);
  EXPECT_EQ(order.order(), (OrderKeys{0, 1, 2}));
}

TEST(PushOrderTest, PriorityTagsGatedPushesWithoutRowsInKeyOrder) {
  PushOrder order;
  order.Reset(3);
  order.SetMarks({2, 1, 0});
  order.set_priority(true);
  EXPECT_TRUE(order.Tags(true, false));
  EXPECT_FALSE(order.Tags(false, false));
  EXPECT_FALSE(order.Tags(true, true));
  order.Plan(true, false);
  EXPECT_EQ(order.order(), (OrderKeys{0, 1, 2}));
  order.Plan(true, /*rows=*/true);  // untagged: mark order
  EXPECT_EQ(order.order(), (OrderKeys{2, 1, 0}));
  order.set_priority(false);
  EXPECT_FALSE(order.Tags(true, false));
}

TEST(PushOrderTest, LeavesRowKeysOut) {
  PushOrder order;
  order.Reset(4);
  order.SetMarks({3, 2, 1, 0});
  order.ClearRowKeys();
  order.AddRowKey(1);
  order.AddRowKey(3);
  order.Plan(true, true);
  EXPECT_EQ(order.order(), (OrderKeys{2, 0}));
  order.ClearRowKeys();
  order.Plan(true, false);
  EXPECT_EQ(order.order(), (OrderKeys{3, 2, 1, 0}));
  EXPECT_THROW(order.AddRowKey(4), std::out_of_range);
}

}  // namespace
}  // namespace pstrain::worker
