// PeerWatch: the Engine's --timeout, handshake deadline, --dead_after and
// late ticks, on a PeerTable and a clock the test moves.

#include "ps/engine/peer_watch.h"

#include <vector>

#include <gtest/gtest.h>

#include "ps/engine/peer_table.h"

namespace pstrain::ps {
namespace {

Time Clock(double seconds) {
  return Time{} + std::chrono::duration_cast<EngineClock::duration>(
                      std::chrono::duration<double>(seconds));
}

constexpr std::chrono::milliseconds kTimeout{10000};

TEST(PeerWatchTest, TimesOutOnlyAfterTheTimeoutWithoutProgress) {
  PeerWatch watch(kTimeout, 0);
  watch.Start(Clock(1));
  EXPECT_FALSE(watch.TimedOut(Clock(11)));
  EXPECT_TRUE(watch.TimedOut(Clock(11.001)));
  watch.Progress(Clock(5));
  EXPECT_FALSE(watch.TimedOut(Clock(15)));
  EXPECT_TRUE(watch.TimedOut(Clock(15.5)));
}

TEST(PeerWatchTest, ALateTickIsCreditedToEveryPeerAndToProgress) {
  PeerTable peers;
  Peer& a = peers.Add(1, "a", "", Clock(1));
  PeerWatch watch(kTimeout, 0);
  watch.Start(Clock(1));
  watch.Tick(Clock(1.2), &peers);  // on time: nothing moves
  watch.Tick(Clock(1.5), &peers);  // 0.3 s: within two ticks
  EXPECT_EQ(a.last_heard, Clock(1));
  // 3.5 s since the last tick: 3.3 s of it was the thread's own.
  watch.Tick(Clock(5), &peers);
  EXPECT_EQ(a.last_heard, Clock(4.3));
  EXPECT_EQ(a.accepted_at, Clock(4.3));
  EXPECT_FALSE(watch.TimedOut(Clock(14.3)));
  EXPECT_TRUE(watch.TimedOut(Clock(14.31)));
}

TEST(PeerWatchTest, NamesOnlyHandshakesPastTheTimeout) {
  PeerTable peers;
  peers.Add(1, "a", "", Clock(0));
  Peer& closing = peers.Add(2, "b", "", Clock(0));
  closing.closing = true;
  Peer& hello = peers.Add(3, "c", "", Clock(0));
  hello.stage = Peer::Stage::kHello;
  peers.Add(4, "d", "", Clock(5));
  PeerWatch watch(kTimeout, 0);
  std::vector<PeerId> late;
  watch.LateHandshakes(peers, Clock(10), &late);
  EXPECT_TRUE(late.empty());
  watch.LateHandshakes(peers, Clock(10.5), &late);
  EXPECT_EQ(late, std::vector<PeerId>{1});
}

TEST(PeerWatchTest, AWorkerIsSilentAfterDeadAfterUnlessItWaitsOnTheServer) {
  PeerTable peers;
  Peer& a = peers.Add(1, "a", "", Clock(0));
  WorkerPeer& w = peers.Become<WorkerPeer>(a, 0);
  w.stage = Peer::Stage::kRegistered;
  PeerWatch watch(kTimeout, 3.0);
  EXPECT_FALSE(watch.Silent(w, false, Clock(3)));
  EXPECT_TRUE(watch.Silent(w, false, Clock(3.5)));
  w.batch.in_flight = true;  // --placement server: the server's time
  EXPECT_FALSE(watch.Silent(w, false, Clock(3.5)));
  w.batch.in_flight = false;
  // Its reply waits for the others, or the standbys.
  EXPECT_FALSE(watch.Silent(w, /*reply_held=*/true, Clock(3.5)));
  w.closing = true;
  EXPECT_FALSE(watch.Silent(w, false, Clock(3.5)));
  w.closing = false;
  w.stage = Peer::Stage::kDone;
  EXPECT_FALSE(watch.Silent(w, false, Clock(3.5)));
  w.stage = Peer::Stage::kRegistered;
  PeerWatch forever(kTimeout, 0);  // no --dead_after
  EXPECT_FALSE(forever.Silent(w, false, Clock(1000)));
}

}  // namespace
}  // namespace pstrain::ps
