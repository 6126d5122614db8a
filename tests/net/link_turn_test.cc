// The link's order without sockets: a worker's pushes to other hosts count
// into the words it shares with its host's server, which reads them as a
// push underway only while bytes are left and were written lately; a
// reply holds while one is, for at most kMaxHold.

#include "net/link_turn.h"

#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "net/shm_segment.h"

namespace pstrain::net {
namespace {

using Clock = LinkTurn::Clock;
using std::chrono::milliseconds;

std::shared_ptr<ShmLinkWords> Words() {
  auto w = std::make_shared<ShmLinkWords>();
  w->push_bytes = 0;
  w->progress_ns = 0;
  w->push_round = 0;
  return w;
}

TEST(LinkTurnTest, APushCountsUntilWrittenOrEnded) {
  auto words = Words();
  LinkTurn push;
  push.CountInto(words);
  const Clock::time_point t0 = Clock::now();
  push.Started(1000, t0);
  EXPECT_EQ(words->push_bytes.load(), 1000);
  EXPECT_TRUE(PushUnderway(*words, t0, 1));
  push.Wrote(600, t0 + milliseconds(5));
  EXPECT_EQ(words->push_bytes.load(), 400);
  EXPECT_TRUE(PushUnderway(*words, t0 + milliseconds(10), 1));
  push.Ended();  // failed: what it did not write stops counting
  EXPECT_EQ(words->push_bytes.load(), 0);
  EXPECT_FALSE(PushUnderway(*words, t0 + milliseconds(10), 1));
  // Writes beyond the frame's bytes (none counted) change nothing.
  push.Wrote(100, t0 + milliseconds(11));
  EXPECT_EQ(words->push_bytes.load(), 0);
}

TEST(LinkTurnTest, TwoPushesShareTheWordsAndAStalledOneIsNotUnderway) {
  auto words = Words();
  LinkTurn a, b;
  a.CountInto(words);
  b.CountInto(words);
  const Clock::time_point t0 = Clock::now();
  a.Started(100, t0);
  b.Started(50, t0);
  a.Wrote(100, t0 + milliseconds(1));
  a.Ended();
  EXPECT_EQ(words->push_bytes.load(), 50);
  EXPECT_TRUE(
      PushUnderway(*words, t0 + milliseconds(1) + LinkTurn::kStale / 2, 1));
  // No write for kStale: its worker is stopped, or its gradients are not
  // made yet; either way its bytes do not use the link now.
  EXPECT_FALSE(
      PushUnderway(*words, t0 + milliseconds(1) + LinkTurn::kStale, 1));
  // A time a peer wrote that lies ahead, or any garbage, is not underway.
  words->progress_ns = std::numeric_limits<int64_t>::min();
  EXPECT_FALSE(PushUnderway(*words, t0, 1));
  words->progress_ns = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(PushUnderway(*words, t0, 1));
}

// A sync step waits for its slowest worker: a reply that ends round r goes
// before a push of round r + 1 (its worker is ahead) and after one of r.
TEST(LinkTurnTest, OnlyAPushOfAnEarlierRoundHoldsAReply) {
  auto words = Words();
  LinkTurn push;
  push.CountInto(words);
  push.set_round(7);  // gradients computed on version 7
  const Clock::time_point t0 = Clock::now();
  push.Started(100, t0);
  EXPECT_EQ(words->push_round.load(), 7u);
  EXPECT_TRUE(PushUnderway(*words, t0, 8));   // the reply of version 8
  EXPECT_FALSE(PushUnderway(*words, t0, 7));  // the laggard's reply of 7
  std::vector<uint64_t> asked;
  LinkTurn reply;
  reply.HoldWhile([&](Clock::time_point now, uint64_t round) {
    asked.push_back(round);
    return PushUnderway(*words, now, round);
  });
  reply.set_round(7);
  EXPECT_FALSE(reply.Hold(t0));
  reply.set_round(8);
  EXPECT_TRUE(reply.Hold(t0));
  EXPECT_EQ(asked, (std::vector<uint64_t>{7, 8}));
}

TEST(LinkTurnTest, NoWordsCountNothing) {
  LinkTurn push;
  push.Started(100, Clock::now());
  push.Wrote(100, Clock::now());
  push.Ended();
  EXPECT_FALSE(push.holds());
  EXPECT_FALSE(push.Hold(Clock::now()));
}

TEST(LinkTurnTest, AReplyHoldsWhileAPushIsUnderwayForAtMostMaxHold) {
  bool underway = true;
  LinkTurn reply;
  reply.HoldWhile([&](Clock::time_point, uint64_t) { return underway; });
  ASSERT_TRUE(reply.holds());
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(reply.Hold(t0));
  EXPECT_TRUE(reply.Hold(t0 + LinkTurn::kMaxHold - milliseconds(1)));
  // Words that never clear stall a reply for kMaxHold, not for ever.
  EXPECT_FALSE(reply.Hold(t0 + LinkTurn::kMaxHold));
  reply.Ended();  // the next frame's wait starts from nothing
  EXPECT_TRUE(reply.Hold(t0 + 2 * LinkTurn::kMaxHold));
  underway = false;
  EXPECT_FALSE(reply.Hold(t0 + 2 * LinkTurn::kMaxHold));
}

// The words live in the connection's segment: what the worker's mapping
// writes, the server's mapping of the same memory reads.
TEST(LinkTurnTest, TheWordsAreSharedThroughTheSegment) {
  auto created = ShmSegment::Create(4096);
  if (!created.ok())
    GTEST_SKIP() << created.status().ToString();
  auto attached = ShmSegment::Attach(created->fd());
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  ShmLinkWords* server = attached->link_words();
  EXPECT_EQ(server->push_bytes.load(), 0);  // a new segment's are zero
  auto worker = std::shared_ptr<ShmLinkWords>(std::shared_ptr<void>(),
                                              created->link_words());
  LinkTurn push;
  push.CountInto(worker);
  const Clock::time_point t0 = Clock::now();
  push.Started(4096, t0);
  EXPECT_EQ(server->push_bytes.load(), 4096);
  EXPECT_TRUE(PushUnderway(*server, t0, 1));
  push.Ended();
  EXPECT_FALSE(PushUnderway(*server, t0, 1));
}

}  // namespace
}  // namespace pstrain::net
