// AwaitBeats: a peer whose request is in and not yet answered hears a
// heartbeat at most every interval; a peer that was answered, or that
// only sends heartbeats itself, hears none; --dead_after off: no beats.

#include "ps/service/await_beats.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::ps {
namespace {

Time BeatAt(double seconds) {
  return Time{} + std::chrono::duration_cast<EngineClock::duration>(
                      std::chrono::duration<double>(seconds));
}

std::vector<PeerId> DueAt(AwaitBeats& beats, double now) {
  std::vector<PeerId> due;
  beats.Due(BeatAt(now), &due);
  return due;
}

TEST(AwaitBeatsTest, TheIntervalIsAQuarterOfDeadAfterAndAtMostASecond) {
  EXPECT_EQ(AwaitBeats::IntervalFor(2), std::chrono::milliseconds(500));
  EXPECT_EQ(AwaitBeats::IntervalFor(30), std::chrono::seconds(1));
  EXPECT_FALSE(AwaitBeats(0).on());
  EXPECT_TRUE(AwaitBeats(2).on());
}

TEST(AwaitBeatsTest, AWaitingPeerHearsABeatEveryInterval) {
  AwaitBeats beats(2);  // every 0.5 s
  beats.In(1, wire::MsgType::kPushPull, BeatAt(1));
  EXPECT_TRUE(DueAt(beats, 1.4).empty());
  EXPECT_EQ(DueAt(beats, 1.5), std::vector<PeerId>{1});
  EXPECT_TRUE(DueAt(beats, 1.9).empty());  // beat at 1.5
  EXPECT_EQ(DueAt(beats, 2.0), std::vector<PeerId>{1});
  beats.Out(1, BeatAt(2.1));  // its reply
  EXPECT_TRUE(DueAt(beats, 5).empty());
}

TEST(AwaitBeatsTest, APeerThatOnlyBeatsOrWasAnsweredHearsNone) {
  AwaitBeats beats(2);
  beats.In(1, wire::MsgType::kHeartbeat, BeatAt(1));  // a server to rank 0
  beats.In(2, wire::MsgType::kHello, BeatAt(1));
  beats.Out(2, BeatAt(1.1));
  beats.In(2, wire::MsgType::kHeartbeat, BeatAt(2));  // a worker computing
  EXPECT_TRUE(DueAt(beats, 9).empty());
  beats.In(3, wire::MsgType::kSnapshot, BeatAt(9));
  beats.Forget(3);
  EXPECT_TRUE(DueAt(beats, 20).empty());
}

TEST(AwaitBeatsTest, NoBeatsWithoutDeadAfter) {
  AwaitBeats beats(0);
  beats.In(1, wire::MsgType::kPushPull, BeatAt(1));
  EXPECT_TRUE(DueAt(beats, 100).empty());
}

}  // namespace
}  // namespace pstrain::ps
