#include "ps/engine/standby_acks.h"

#include <chrono>
#include <limits>
#include <vector>

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

Time AckAt(double seconds) {
  return Time{} + std::chrono::duration_cast<EngineClock::duration>(
                      std::chrono::duration<double>(seconds));
}

std::vector<PeerId> LateAt(const StandbyAcks& acks, double now) {
  std::vector<PeerId> late;
  acks.Late(AckAt(now), 1.0, &late);
  return late;
}

// A standby is late when it lacks a version made longer ago than the
// limit and has asked for nothing since; asking starts its clock again,
// and one that holds the latest version is never late.
TEST(StandbyAcksTest, AStandbyIsLateOnceItLacksAVersionForLong) {
  StandbyAcks acks;
  acks.Asked(1, 5);  // holds 4
  acks.Asked(2, 6);  // holds 5
  acks.Behind(5, AckAt(0));
  EXPECT_TRUE(LateAt(acks, 1).empty());
  EXPECT_EQ(LateAt(acks, 1.5), std::vector<PeerId>{1});
  acks.Behind(6, AckAt(1.2));  // 1 stays behind since 0; 2 from now
  EXPECT_EQ(LateAt(acks, 2.3), (std::vector<PeerId>{1, 2}));
  acks.Asked(1, 7);  // holds 6, the latest
  acks.Behind(6, AckAt(2.3));
  EXPECT_EQ(LateAt(acks, 9), std::vector<PeerId>{2});
  acks.Asked(2, 6);  // still lacks 6: late again only after the limit
  acks.Behind(6, AckAt(9));
  EXPECT_TRUE(LateAt(acks, 9.5).empty());
  EXPECT_EQ(LateAt(acks, 10.5), std::vector<PeerId>{2});
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
