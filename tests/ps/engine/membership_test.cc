#include "ps/engine/membership.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/peer.h"
#include "ps/engine/ssp_gate.h"
#include "ps/engine/write_fence.h"
#include "ps/store/parameter_server.h"
#include "testing/engine_harness.h"
#include "testing/shard.h"

namespace pstrain::ps {
namespace {

// One server (rank 0), so worker w is rank w + 1.
JobSpec Spec(Mode mode, int workers) {
  return testing::SgdSpec(mode, workers);
}

Time At(int seconds) {
  return Time{} + std::chrono::seconds(seconds);
}

// A job of `workers` workers: its server, SSP gate (staleness 0), fence
// and the Membership that drives them.
struct Job {
  Job(Mode mode, int workers)
      : params{torch::tensor({1.0f, 2.0f}).requires_grad_()},
        server(Spec(mode, workers), params),
        ssp(workers, 0),
        members(1, workers, &server.rule(), &ssp, &fence) {
    for (int w = 0; w < workers; ++w)
      peers.push_back(std::make_unique<WorkerPeer>(Peer(), w));
  }

  // Worker w's whole push for the current version (sync).
  void Push(int w) {
    const float grad[2] = {1.0f, 1.0f};
    server.Accumulate(w, 0, 0, grad, sizeof(grad));
    ASSERT_TRUE(server.Push(w, server.version()).ok());
  }
  // The members that have not pushed for the current version (sync).
  std::vector<int> MissingPushes() const {
    std::vector<int> missing;
    for (int w = 0; w < members.num_workers(); ++w) {
      if (members.in_quorum(w) && server.rule().awaits_push(w))
        missing.push_back(w);
    }
    return missing;
  }
  void RegisterAll() {
    for (int w = 0; w < members.num_workers(); ++w) {
      ASSERT_TRUE(members.CheckRegister(w).ok());
      members.Register(w, peers[w].get(), At(w));
    }
  }

  std::vector<at::Tensor> params;
  testing::Shard server;
  SspGate ssp;
  WriteFence fence;
  Membership members;
  std::vector<std::unique_ptr<WorkerPeer>> peers;
};

TEST(MembershipTest, RegisterKeepsThePeerAndCounts) {
  Job job(Mode::kSync, 3);
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

TEST(MembershipTest, LoseThenRemoveLeavesTheQuorum) {
  Job job(Mode::kSync, 3);
  job.RegisterAll();
  job.members.Lose(1);
  EXPECT_TRUE(job.members.lost(1));
  EXPECT_EQ(job.members.lost_count(), 1);
  EXPECT_EQ(job.members.losses(), 1u);
  EXPECT_TRUE(job.members.in_quorum(1));  // until Remove
  EXPECT_EQ(job.members.Remove(1), Membership::Removal::kNone);
  EXPECT_FALSE(job.members.in_quorum(1));
  EXPECT_EQ(job.members.quorum(), 2);
  EXPECT_EQ(job.MissingPushes(), (std::vector<int>{0, 2}));
  job.members.Disconnect(1, job.peers[1].get());
  EXPECT_EQ(job.members.peer(1), nullptr);
  EXPECT_EQ(job.members.CheckRegister(1).code(), StatusCode::kOk);
  // Removing a worker that is no member changes nothing.
  EXPECT_EQ(job.members.Remove(1), Membership::Removal::kNone);
  EXPECT_EQ(job.members.quorum(), 2);
}

TEST(MembershipTest, RemovingTheLastAwaitedWorkerClosesTheStep) {
  Job job(Mode::kSync, 2);
  job.RegisterAll();
  job.Push(0);
  EXPECT_EQ(job.server.version(), 0u);
  job.members.Lose(1);
  EXPECT_EQ(job.members.Remove(1), Membership::Removal::kStepped);
  EXPECT_EQ(job.server.version(), 1u);
  EXPECT_EQ(job.members.quorum(), 1);
}

TEST(MembershipTest, FenceHoldsTheRemovalAndTheRejoin) {
  Job job(Mode::kSync, 2);
  job.RegisterAll();
  job.fence.Sent(7);  // parameters on the wire
  job.members.Lose(1);
  job.members.Disconnect(1, job.peers[1].get());
  EXPECT_EQ(job.members.Remove(1), Membership::Removal::kHeld);
  EXPECT_TRUE(job.members.in_quorum(1));
  EXPECT_TRUE(job.fence.removing(1));
  auto early = job.members.Rejoin(1);
  EXPECT_EQ(early.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(early.status().message(),
            "rank 2 is still being removed; try again");
  EXPECT_TRUE(job.members.lost(1));
  EXPECT_EQ(job.members.lost_count(), 1);
  ASSERT_TRUE(job.fence.Written(7));
  const std::vector<WriteFence::Work>& work = job.fence.TakeWaiting();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].worker, 1);
  EXPECT_EQ(job.members.Remove(1), Membership::Removal::kNone);
  EXPECT_EQ(job.members.quorum(), 1);
  auto rejoined = job.members.Rejoin(1);
  ASSERT_TRUE(rejoined.ok());
  EXPECT_TRUE(*rejoined);  // no push of this step is in: joins it
  EXPECT_FALSE(job.members.lost(1));
  EXPECT_EQ(job.members.lost_count(), 0);
  EXPECT_EQ(job.members.losses(), 1u);
  EXPECT_EQ(job.members.quorum(), 2);
  job.members.Register(1, job.peers[1].get(), At(9));
  EXPECT_EQ(job.members.peer(1), job.peers[1].get());
  EXPECT_EQ(job.members.registered(), 3);
  EXPECT_EQ(job.members.first_register(), At(0));
}

TEST(MembershipTest, RejoinAfterAPushJoinsFromTheNextVersion) {
  Job job(Mode::kSync, 3);
  job.RegisterAll();
  job.members.Lose(2);
  EXPECT_EQ(job.members.Remove(2), Membership::Removal::kNone);
  job.Push(0);
  auto rejoined = job.members.Rejoin(2);
  ASSERT_TRUE(rejoined.ok());
  EXPECT_FALSE(*rejoined);
  EXPECT_TRUE(job.members.in_quorum(2));
  EXPECT_EQ(job.members.quorum(), 3);
  // This step still waits for worker 1 only.
  EXPECT_EQ(job.MissingPushes(), (std::vector<int>{1, 2}));
  job.Push(1);
  EXPECT_EQ(job.server.version(), 1u);
  EXPECT_EQ(job.MissingPushes(), (std::vector<int>{0, 1, 2}));
}

TEST(MembershipTest, FinishRecordsStatsAndEndsTheRun) {
  Job job(Mode::kSync, 2);
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
  Job job(Mode::kAsync, 2);
  job.RegisterAll();
  job.members.Lose(0);
  job.members.Lose(1);
  EXPECT_EQ(job.members.lost_count(), 2);
  EXPECT_FALSE(job.members.finished());
}

TEST(MembershipTest, DoneAndLostWorkersHoldNoOneBackInSsp) {
  Job job(Mode::kSsp, 3);
  job.RegisterAll();
  job.ssp.NotePush(0);
  EXPECT_FALSE(job.ssp.Allows(0));  // staleness 0, one step ahead
  job.members.Finish(1, report::WorkerStats{}, 0, At(5));
  EXPECT_FALSE(job.ssp.Allows(0));  // worker 2 still at clock 0
  job.members.Lose(2);
  EXPECT_TRUE(job.ssp.Allows(0));
  EXPECT_EQ(job.members.Remove(2), Membership::Removal::kNone);
  EXPECT_EQ(job.members.quorum(), 2);
  auto rejoined = job.members.Rejoin(2);
  ASSERT_TRUE(rejoined.ok());
  EXPECT_FALSE(*rejoined);  // ssp never joins a step
  // Back at the slowest training clock (worker 0's): no one is held.
  EXPECT_TRUE(job.ssp.Allows(0));
  EXPECT_TRUE(job.ssp.Allows(2));
  EXPECT_EQ(job.members.quorum(), 3);
}

}  // namespace
}  // namespace pstrain::ps
