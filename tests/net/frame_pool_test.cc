// FramePool: frames are reused once given back, and a held frame is never
// handed out twice.

#include "net/frame_pool.h"

#include <gtest/gtest.h>

namespace pstrain::net {
namespace {

TEST(FramePoolTest, AGivenBackFrameIsTakenAgainAndAHeldOneNever) {
  FramePool pool;
  FrameBuffers& a = pool.Take();
  FrameBuffers& b = pool.Take();
  EXPECT_NE(&a, &b);
  EXPECT_EQ(pool.size(), 2u);
  pool.Give(&a);
  EXPECT_EQ(&pool.Take(), &a);
  EXPECT_NE(&pool.Take(), &b);  // b is still held: a new frame
  EXPECT_EQ(pool.size(), 3u);
}

}  // namespace
}  // namespace pstrain::net
