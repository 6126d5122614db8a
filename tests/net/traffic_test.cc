// Traffic, without sockets or sleeps: a frame on its way for longer than the
// limit is stalled, in either direction; idle time between frames and a
// write's wait for its gate are not; bytes add up.

#include "net/traffic.h"

#include <chrono>

#include <gtest/gtest.h>

namespace pstrain::net {
namespace {

using std::chrono::milliseconds;

const Traffic::TimePoint kStart = Traffic::TimePoint{} + std::chrono::hours(1);
constexpr milliseconds kLimit{100};

TEST(TrafficTest, IdleBetweenFramesIsNeverStalled) {
  Traffic t;
  EXPECT_FALSE(t.reading());
  EXPECT_FALSE(t.StalledFor(kStart + std::chrono::hours(24), kLimit));
}

TEST(TrafficTest, AFrameComingInForTooLongIsStalled) {
  Traffic t;
  t.ReadStarted(kStart);
  EXPECT_TRUE(t.reading());
  EXPECT_FALSE(t.StalledFor(kStart + kLimit, kLimit));
  EXPECT_TRUE(t.StalledFor(kStart + kLimit + milliseconds(1), kLimit));
  t.ReadEnded();
  EXPECT_FALSE(t.reading());
  EXPECT_FALSE(t.StalledFor(kStart + kLimit + milliseconds(1), kLimit));
}

TEST(TrafficTest, AWriteIsStalledOnlyWhileOnItsWay) {
  Traffic t;
  t.WriteStarted(kStart);
  EXPECT_EQ(t.writing_since(), kStart);
  EXPECT_TRUE(t.StalledFor(kStart + 2 * kLimit, kLimit));
  // Waiting for its gate: the time is the sender's own.
  t.WriteEnded();
  EXPECT_EQ(t.writing_since(), Traffic::TimePoint{});
  EXPECT_FALSE(t.StalledFor(kStart + 2 * kLimit, kLimit));
  // It goes on: its clock starts again.
  t.WriteStarted(kStart + 2 * kLimit);
  EXPECT_FALSE(t.StalledFor(kStart + 3 * kLimit, kLimit));
  EXPECT_TRUE(t.StalledFor(kStart + 3 * kLimit + milliseconds(1), kLimit));
}

TEST(TrafficTest, CountsBytesEachWay) {
  Traffic t;
  t.Read(12);
  t.Read(30);
  t.Wrote(7);
  EXPECT_EQ(t.bytes_read(), 42u);
  EXPECT_EQ(t.bytes_written(), 7u);
}

}  // namespace
}  // namespace pstrain::net
