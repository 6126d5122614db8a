// The StepDriver, the one path that changes the rule and the store: pushes
// planned, read and applied, workers leaving and joining the quorum behind
// the WriteFence, steps closed by their deadline, and the stop.

#include "ps/engine/step_driver.h"

#include <chrono>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/write_fence.h"
#include "ps/job/tensor_codec.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "testing/driver_job.h"

namespace pstrain::ps {
namespace {

using testing::DriverJob;

Time DriverAt(double seconds) {
  return DriverJob::At(seconds);
}

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
