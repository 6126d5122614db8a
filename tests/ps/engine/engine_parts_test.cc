// The Engine's smaller parts: its peers (PeerTable), the --step_timeout
// clock (StepDeadline), the snapshots waiting for a version
// (SnapshotQueue), the workers' progress (ProgressFeed) and the work that
// waits for parameter writes (WriteFence).

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ps/engine/peer_table.h"
#include "ps/engine/progress_feed.h"
#include "ps/engine/snapshot_queue.h"
#include "ps/engine/step_deadline.h"
#include "ps/engine/write_fence.h"

namespace pstrain::ps {
namespace {

Time At(double seconds) {
  return Time{} + std::chrono::duration_cast<EngineClock::duration>(
                      std::chrono::duration<double>(seconds));
}

TEST(PeerTableTest, AddFindAndRetire) {
  PeerTable peers;
  Peer& a = peers.Add(4, "127.0.0.1:5000", "", At(1));
  EXPECT_EQ(a.id, 4u);
  EXPECT_EQ(a.remote, "127.0.0.1:5000");
  EXPECT_EQ(a.accepted_at, At(1));
  EXPECT_EQ(a.last_heard, At(1));
  EXPECT_EQ(a.role, Peer::Role::kUnknown);
  EXPECT_TRUE(a.auth.open());  // no token
  EXPECT_EQ(peers.Find(4), &a);
  EXPECT_EQ(peers.Find(5), nullptr);
  EXPECT_EQ(peers.FindWorker(4), nullptr);  // no role yet
  Peer* closed = peers.Retire(4);
  EXPECT_EQ(closed, &a);
  EXPECT_EQ(peers.Find(4), nullptr);
  EXPECT_EQ(peers.size(), 0u);
  EXPECT_EQ(peers.retired(), 1u);
  EXPECT_EQ(closed->remote, "127.0.0.1:5000");  // alive until Sweep
  EXPECT_EQ(peers.Retire(4), nullptr);
  peers.Sweep();
  EXPECT_EQ(peers.retired(), 0u);
}

TEST(PeerTableTest, BecomeKeepsTheConnectionAndRetiresTheOldObject) {
  PeerTable peers;
  Peer& a = peers.Add(9, "h:1", "secret", At(2));
  EXPECT_FALSE(a.auth.open());
  a.rank = 3;
  a.role = Peer::Role::kWorker;
  a.stage = Peer::Stage::kHello;
  WorkerPeer& w = peers.Become<WorkerPeer>(a, 2);
  EXPECT_NE(static_cast<Peer*>(&w), &a);
  EXPECT_EQ(peers.Find(9), &w);
  EXPECT_EQ(peers.FindWorker(9), &w);
  EXPECT_EQ(w.worker, 2);
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.remote, "h:1");
  EXPECT_EQ(w.stage, Peer::Stage::kHello);
  EXPECT_EQ(w.accepted_at, At(2));
  EXPECT_EQ(peers.retired(), 1u);
  EXPECT_EQ(AsServer(w), nullptr);
  EXPECT_EQ(AsTool(w), nullptr);
  EXPECT_EQ(Registered(w), nullptr);
  w.stage = Peer::Stage::kRegistered;
  EXPECT_EQ(Registered(w), &w);
  size_t open = 0;
  for (const auto& [id, peer] : peers) {
    EXPECT_EQ(id, 9u);
    EXPECT_EQ(peer.get(), &w);
    ++open;
  }
  EXPECT_EQ(open, 1u);
}

TEST(StepDeadlineTest, ArmsOncePerVersionAndFallsDueAtItsEnd) {
  StepDeadline d;
  EXPECT_EQ(d.Arm(0, 1, 0.0, At(1)), std::nullopt);  // off
  EXPECT_EQ(d.Arm(0, 0, 2.0, At(1)), std::nullopt);  // no push in
  EXPECT_EQ(d.Arm(0, 1, 2.0, At(1)), At(3));
  EXPECT_EQ(d.Arm(0, 2, 2.0, At(2)), std::nullopt);  // armed already
  EXPECT_EQ(d.Due(0, At(2.5)), std::nullopt);
  EXPECT_EQ(d.Due(0, At(3)), 0u);
  EXPECT_EQ(d.Due(1, At(9)), std::nullopt);  // that step has closed
  EXPECT_EQ(d.Arm(1, 1, 0.5, At(4)), At(4.5));
  EXPECT_EQ(d.Due(1, At(4.5)), 1u);
  EXPECT_EQ(d.timed_out(), 0u);
  d.CountTimedOut();
  d.CountTimedOut();
  EXPECT_EQ(d.timed_out(), 2u);
}

TEST(SnapshotQueueTest, TakesWhatIsDueInOrderAndAbandonsTheRest) {
  SnapshotQueue q;
  EXPECT_TRUE(q.empty());
  std::vector<int> calls;
  auto note = [&calls](int i) {
    return [&calls, i](std::shared_ptr<const Snapshot>) { calls.push_back(i); };
  };
  q.Add(2, false, note(0));
  q.Add(5, false, note(1));
  q.Add(3, true, note(2));
  EXPECT_FALSE(q.empty());
  SnapshotQueue::Due none = q.TakeDue(1);
  EXPECT_TRUE(none.requests.empty());
  EXPECT_FALSE(none.with_optimizer_state);
  SnapshotQueue::Due due = q.TakeDue(3);
  ASSERT_EQ(due.requests.size(), 2u);
  EXPECT_EQ(due.requests[0].min_version, 2u);
  EXPECT_EQ(due.requests[1].min_version, 3u);
  EXPECT_TRUE(due.with_optimizer_state);
  for (auto& r : due.requests)
    r.done(nullptr);
  EXPECT_EQ(calls, (std::vector<int>{0, 2}));
  std::vector<SnapshotQueue::Request> rest = q.TakeAll();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].min_version, 5u);
  EXPECT_TRUE(q.empty());
}

std::string HeartbeatMeta(const std::string& json) {
  std::string meta;
  wire::EncodeMeta(wire::Heartbeat{json}, &meta);
  return meta;
}

TEST(ProgressFeedTest, HandsOnEachProgressAndSkipsEmptyOnes) {
  ProgressFeed feed;
  // No receiver: nothing is decoded, not even bad bytes.
  EXPECT_TRUE(feed.Heartbeat(3, "\xff").ok());
  std::vector<std::pair<int, std::string>> got;
  feed.set_receiver([&](int rank, std::string_view json) {
    got.emplace_back(rank, std::string(json));
  });
  ASSERT_TRUE(feed.Heartbeat(3, HeartbeatMeta(R"({"step":7})")).ok());
  ASSERT_TRUE(feed.Heartbeat(4, HeartbeatMeta("")).ok());
  ASSERT_TRUE(feed.Heartbeat(2, HeartbeatMeta(R"({"step":1})")).ok());
  EXPECT_EQ(got, (std::vector<std::pair<int, std::string>>{
                     {3, R"({"step":7})"}, {2, R"({"step":1})"}}));
  EXPECT_FALSE(feed.Heartbeat(3, "\xff").ok());
}

// Work waits while params frames are on the wire and is taken in order
// once the last has left; work held while taken waits apart.
TEST(WriteFenceTest, TakesTheWaitingWorkInOrderAndKeepsNewWorkApart) {
  using Kind = WriteFence::Work::Kind;
  WriteFence fence;
  EXPECT_FALSE(fence.Holds({Kind::kPush, -1, 0, 7, 1}));  // nothing sent
  fence.Sent(7);
  EXPECT_TRUE(fence.Holds({Kind::kRemoveWorker, 2, 0, 0, 0}));
  EXPECT_TRUE(fence.Holds({Kind::kPush, -1, 0, 7, 3}));
  EXPECT_TRUE(fence.Written(7));
  const std::vector<WriteFence::Work>& taken = fence.TakeWaiting();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].kind, Kind::kRemoveWorker);
  EXPECT_EQ(taken[1].request_id, 3u);
  fence.Sent(7);
  EXPECT_TRUE(fence.Holds({Kind::kCloseStep, -1, 5, 0, 0}));
  EXPECT_EQ(taken.size(), 2u);  // what was taken stays as it was
  EXPECT_TRUE(fence.Written(7));
  const std::vector<WriteFence::Work>& next = fence.TakeWaiting();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].version, 5u);
}

}  // namespace
}  // namespace pstrain::ps
