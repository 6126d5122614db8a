// The StepDriver, the one path that changes the rule and the store: pushes
// planned, read and applied, workers leaving and joining the quorum behind
// the WriteFence, steps closed by their deadline, and the stop.

#include "ps/engine/step_driver.h"

#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_watch.h"
#include "ps/job/tensor_codec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "testing/engine_harness.h"
#include "testing/fake_outbox.h"

namespace pstrain::ps {
namespace {

Time DriverAt(double seconds) {
  return Time{} + std::chrono::duration_cast<EngineClock::duration>(
                      std::chrono::duration<double>(seconds));
}

// One server (rank 0) and `workers` registered workers (worker w is rank
// w + 1), over a real store of one key, w = [1, 2].
struct DriverJob {
  DriverJob(Mode mode, int workers, double step_timeout = 0)
      : spec(Spec(mode, workers, step_timeout)),
        params{torch::tensor({1.0f, 2.0f}).requires_grad_()},
        store(spec, params),
        formats(spec, {KeySpecOf("w", params[0])}, store),
        members(1, workers),
        watch(std::chrono::seconds(120), 0),
        steps(spec, &store, &formats, &members, &watch, &outbox) {
    for (int w = 0; w < workers; ++w) {
      peers.push_back(std::make_unique<WorkerPeer>(Peer(), w));
      peers.back()->id = 10 + w;
      peers.back()->rank = w + 1;
      members.Register(w, peers.back().get(), DriverAt(0));
    }
  }

  static JobSpec Spec(Mode mode, int workers, double step_timeout) {
    JobSpec s = testing::SgdSpec(mode, workers);
    s.step_timeout = step_timeout;
    return s;
  }

  // Worker w's push of gradient `grad` for the store's version, planned
  // and read; returns whether applying it closed the step.
  Result<bool> Push(int w, float grad) {
    WorkerPeer& peer = *peers[w];
    wire::Push push;
    push.version = store.version();
    push.grads = {DescribeTensor(0, params[0])};
    std::string meta;
    wire::EncodeMeta(push, &meta);
    ReadPlan plan;
    PS_RETURN_IF_ERROR(
        steps.PlanPush(peer, wire::MsgType::kPush, meta, 1, &plan));
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      auto* f = static_cast<float*>(plan.buffers[i].data);
      for (size_t j = 0; j < plan.buffers[i].bytes / sizeof(float); ++j)
        f[j] = grad;
      steps.ReadPiece(peer, i);
    }
    return steps.Apply(peer, push.version, DriverAt(1));
  }

  JobSpec spec;
  std::vector<at::Tensor> params;
  ParameterServer store;
  KeyFormats formats;
  Membership members;
  PeerWatch watch;
  testing::FakeOutbox outbox;
  StepDriver steps;
  std::vector<std::unique_ptr<WorkerPeer>> peers;
};

TEST(StepDriverTest, TheLastPushClosesTheStepOnTheMeanGradient) {
  DriverJob job(Mode::kSync, 2);
  ASSERT_FALSE(*job.Push(0, 1.0f));
  EXPECT_EQ(job.store.version(), 0u);
  ASSERT_TRUE(*job.Push(1, 3.0f));
  EXPECT_EQ(job.store.version(), 1u);
  job.steps.UpdateAllKeys();
  // lr 0.5: w - 0.5 * mean(1, 3)
  EXPECT_TRUE(torch::allclose(job.params[0], torch::tensor({0.0f, 1.0f})));
  EXPECT_TRUE(job.steps.complete());
}

TEST(StepDriverTest, RemovingTheLastAwaitedWorkerClosesTheStep) {
  DriverJob job(Mode::kSync, 2);
  ASSERT_FALSE(*job.Push(0, 1.0f));
  EXPECT_EQ(job.steps.RemoveWorker(1), StepDriver::Outcome::kClosed);
  EXPECT_EQ(job.store.version(), 1u);
  EXPECT_EQ(job.members.quorum(), 1);
  // Removing a worker that is no member changes nothing.
  EXPECT_EQ(job.steps.RemoveWorker(1), StepDriver::Outcome::kNone);
  EXPECT_EQ(job.Push(1, 1.0f).status().message(),
            "push from a worker that is not a member");
}

TEST(StepDriverTest, TheFenceHoldsTheRemovalAndTheRejoin) {
  DriverJob job(Mode::kSync, 2);
  job.steps.Sent(7);  // parameters on the wire
  job.members.Lose(1);
  EXPECT_EQ(job.steps.RemoveWorker(1), StepDriver::Outcome::kHeld);
  EXPECT_TRUE(job.members.in_quorum(1));
  auto early = job.steps.Rejoin(1);
  EXPECT_EQ(early.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(early.status().message(),
            "rank 2 is still being removed; try again");
  EXPECT_TRUE(job.members.lost(1));
  ASSERT_TRUE(job.steps.Written(7));
  const std::vector<FenceWork>& work = job.steps.TakeWaiting();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].kind, FenceWork::Kind::kRemoveWorker);
  EXPECT_EQ(work[0].worker, 1);
  EXPECT_EQ(job.steps.RemoveWorker(1), StepDriver::Outcome::kNone);
  EXPECT_EQ(job.members.quorum(), 1);
  auto rejoined = job.steps.Rejoin(1);
  ASSERT_TRUE(rejoined.ok());
  EXPECT_TRUE(*rejoined);  // no push of this step is in: joins it
  EXPECT_FALSE(job.members.lost(1));
  EXPECT_EQ(job.members.quorum(), 2);
}

TEST(StepDriverTest, ARejoinAfterAPushJoinsFromTheNextVersion) {
  DriverJob job(Mode::kSync, 3);
  job.members.Lose(2);
  EXPECT_EQ(job.steps.RemoveWorker(2), StepDriver::Outcome::kNone);
  ASSERT_FALSE(*job.Push(0, 1.0f));
  auto rejoined = job.steps.Rejoin(2);
  ASSERT_TRUE(rejoined.ok());
  EXPECT_FALSE(*rejoined);
  // This step still waits for worker 1 only.
  EXPECT_TRUE(*job.Push(1, 1.0f));
  EXPECT_EQ(job.store.version(), 1u);
  EXPECT_TRUE(job.steps.rule().awaits_push(2));
}

TEST(StepDriverTest, APushWaitsForTheFenceAndIsHandedBackInOrder) {
  DriverJob job(Mode::kSync, 1);
  job.steps.Sent(10);
  EXPECT_TRUE(job.steps.Holds({FenceWork::Kind::kPush, -1, 0, 10, 5}));
  EXPECT_FALSE(job.steps.fence_open());
  ASSERT_TRUE(job.steps.Written(10));
  const std::vector<FenceWork>& work = job.steps.TakeWaiting();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].request_id, 5u);
  EXPECT_TRUE(job.steps.fence_open());
  EXPECT_FALSE(job.steps.Holds({FenceWork::Kind::kPush, -1, 0, 10, 6}));
}

TEST(StepDriverTest, AStepTimeoutClosesTheStepWithThePushesItHas) {
  DriverJob job(Mode::kSync, 2, /*step_timeout=*/2.0);
  ASSERT_FALSE(*job.Push(0, 2.0f));
  ASSERT_TRUE(job.outbox.wake.has_value());
  EXPECT_EQ(*job.outbox.wake, DriverAt(3));  // the push came at 1 s
  EXPECT_FALSE(job.steps.TimedOut(DriverAt(2.5)).has_value());
  ASSERT_EQ(job.steps.TimedOut(DriverAt(3)), std::optional<uint64_t>(0));
  EXPECT_EQ(job.steps.CloseTimedOut(0), StepDriver::Outcome::kClosed);
  EXPECT_EQ(job.store.version(), 1u);
  EXPECT_EQ(job.steps.timed_out_steps(), 1u);
  // A deadline for a version made already closes nothing.
  EXPECT_EQ(job.steps.CloseTimedOut(0), StepDriver::Outcome::kNone);
}

TEST(StepDriverTest, OnceStoppedPushesAreAnsweredButNotApplied) {
  DriverJob job(Mode::kAsync, 1);
  ASSERT_TRUE(*job.Push(0, 1.0f));  // async: each push makes a version
  EXPECT_EQ(job.store.version(), 1u);
  EXPECT_TRUE(job.steps.Stop());
  EXPECT_FALSE(job.steps.Stop());  // once
  EXPECT_TRUE(job.steps.stopped());
  ASSERT_FALSE(*job.Push(0, 1.0f));
  EXPECT_EQ(job.store.version(), 1u);
}

}  // namespace
}  // namespace pstrain::ps
