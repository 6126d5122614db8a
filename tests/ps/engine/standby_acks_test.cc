#include "ps/engine/standby_acks.h"

#include <limits>

#include <gtest/gtest.h>

namespace pstrain::ps {
namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

TEST(StandbyAcksTest, NoStandbyWaitsForNothing) {
  StandbyAcks acks;
  EXPECT_EQ(acks.held(), kNone);
  EXPECT_EQ(acks.count(), 0);
  EXPECT_FALSE(acks.Drop(7));
}

TEST(StandbyAcksTest, ARequestAcknowledgesTheVersionBeforeIt) {
  StandbyAcks acks;
  acks.Asked(1, 0);  // its first copy: of whatever the primary holds
  EXPECT_EQ(acks.held(), 0u);
  acks.Asked(1, 6);
  EXPECT_EQ(acks.held(), 5u);
  acks.Asked(1, 3);  // a confused standby cannot take a version back
  EXPECT_EQ(acks.held(), 5u);
}

TEST(StandbyAcksTest, TheLeastHeldOfSeveralCountsAndADroppedOneNoLonger) {
  StandbyAcks acks;
  acks.Asked(1, 9);
  acks.Asked(2, 4);
  EXPECT_EQ(acks.count(), 2);
  EXPECT_EQ(acks.held(), 3u);
  EXPECT_TRUE(acks.Drop(2));
  EXPECT_EQ(acks.held(), 8u);
  EXPECT_TRUE(acks.Drop(1));
  EXPECT_EQ(acks.held(), kNone);
}

TEST(StandbyAcksTest, CountsTheBytesSentToStandbys) {
  StandbyAcks acks;
  EXPECT_EQ(acks.bytes_sent(), 0u);
  acks.Sent(100);
  acks.Sent(28);
  EXPECT_EQ(acks.bytes_sent(), 128u);
}

}  // namespace
}  // namespace pstrain::ps
