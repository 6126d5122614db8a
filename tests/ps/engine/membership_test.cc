#include "ps/engine/membership.h"

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "ps/engine/peer.h"
#include "report/worker_stats.h"

namespace pstrain::ps {
namespace {

// One server (rank 0), so worker w is rank w + 1.
Time At(int seconds) {
  return Time{} + std::chrono::seconds(seconds);
}

// A job of `workers` workers: the Membership record and their peers.
struct Job {
  explicit Job(int workers) : members(1, workers) {
    for (int w = 0; w < workers; ++w)
      peers.push_back(std::make_unique<WorkerPeer>(Peer(), w));
  }

  void RegisterAll() {
    for (int w = 0; w < members.num_workers(); ++w) {
      ASSERT_TRUE(members.CheckRegister(w).ok());
      members.Register(w, peers[w].get(), At(w));
    }
  }

  Membership members;
  std::vector<std::unique_ptr<WorkerPeer>> peers;
};

TEST(MembershipTest, RegisterKeepsThePeerAndCounts) {
  Job job(3);
  EXPECT_EQ(job.members.peer(0), nullptr);
  EXPECT_EQ(job.members.registered(), 0);
  job.RegisterAll();
  EXPECT_EQ(job.members.peer(0), job.peers[0].get());
  EXPECT_EQ(job.members.peer(2), job.peers[2].get());
  EXPECT_EQ(job.members.registered(), 3);
  EXPECT_EQ(job.members.first_register(), At(0));
  EXPECT_EQ(job.members.quorum(), 3);
  EXPECT_EQ(job.members.done_count(), 0);
  EXPECT_EQ(job.members.lost_count(), 0);
  EXPECT_FALSE(job.members.finished());
  Status again = job.members.CheckRegister(1);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(again.message(), "rank 2 has already registered");
}

TEST(MembershipTest, LoseThenLeaveQuorumThenRejoin) {
  Job job(3);
  job.RegisterAll();
  job.members.Lose(1);
  EXPECT_TRUE(job.members.lost(1));
  EXPECT_EQ(job.members.lost_count(), 1);
  EXPECT_EQ(job.members.losses(), 1u);
  EXPECT_TRUE(job.members.in_quorum(1));  // until LeaveQuorum
  EXPECT_TRUE(job.members.LeaveQuorum(1));
  EXPECT_FALSE(job.members.in_quorum(1));
  EXPECT_EQ(job.members.quorum(), 2);
  EXPECT_EQ(job.members.CheckMember(1).message(),
            "push from a worker that is not a member");
  job.members.Disconnect(1, job.peers[1].get());
  EXPECT_EQ(job.members.peer(1), nullptr);
  EXPECT_EQ(job.members.CheckRegister(1).code(), StatusCode::kOk);
  // Leaving again changes nothing.
  EXPECT_FALSE(job.members.LeaveQuorum(1));
  EXPECT_EQ(job.members.quorum(), 2);
  job.members.Rejoin(1);
  EXPECT_FALSE(job.members.lost(1));
  EXPECT_TRUE(job.members.in_quorum(1));
  EXPECT_EQ(job.members.lost_count(), 0);
  EXPECT_EQ(job.members.losses(), 1u);
  job.members.Register(1, job.peers[1].get(), At(9));
  EXPECT_EQ(job.members.peer(1), job.peers[1].get());
  EXPECT_EQ(job.members.registered(), 4);
  EXPECT_EQ(job.members.first_register(), At(0));
}

TEST(MembershipTest, ADisconnectOfAnOldConnectionKeepsTheNewOne) {
  Job job(2);
  job.RegisterAll();
  WorkerPeer again(Peer(), 1);
  job.members.Lose(1);
  ASSERT_TRUE(job.members.LeaveQuorum(1));
  job.members.Disconnect(1, job.peers[1].get());
  job.members.Rejoin(1);
  job.members.Register(1, &again, At(5));
  job.members.Disconnect(1, job.peers[1].get());  // the old one, late
  EXPECT_EQ(job.members.peer(1), &again);
}

TEST(MembershipTest, FinishRecordsStatsAndEndsTheRun) {
  Job job(2);
  job.RegisterAll();
  report::WorkerStats stats;
  stats.samples = 640;
  job.members.Finish(0, stats, 1.5, At(30));
  EXPECT_TRUE(job.members.done(0));
  EXPECT_EQ(job.members.done_count(), 1);
  ASSERT_EQ(job.members.stats().size(), 1u);
  EXPECT_EQ(job.members.stats()[0].samples, 640);
  EXPECT_DOUBLE_EQ(job.members.waiting_seconds(), 1.5);
  EXPECT_EQ(job.members.last_done(), At(30));
  EXPECT_EQ(job.members.peer(0), job.peers[0].get());  // until it disconnects
  EXPECT_EQ(job.members.CheckRegister(0).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(job.members.finished());
  job.members.Lose(1);
  EXPECT_TRUE(job.members.finished());
  job.members.Disconnect(0, job.peers[0].get());
  EXPECT_EQ(job.members.CheckRegister(0).code(),
            StatusCode::kInvalidArgument);  // done stays done
}

TEST(MembershipTest, EveryWorkerLostIsNoFinish) {
  Job job(2);
  job.RegisterAll();
  job.members.Lose(0);
  job.members.Lose(1);
  EXPECT_EQ(job.members.lost_count(), 2);
  EXPECT_FALSE(job.members.finished());
}

}  // namespace
}  // namespace pstrain::ps
