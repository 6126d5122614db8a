// The Engine's update rules at their edges, with a fake outbox and a clock
// the test moves: no sockets, no threads, no sleeps.

#include "ps/engine/engine.h"

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/handshake.h"
#include "ps/engine/step_driver.h"
#include "ps/rules/update_rule.h"
#include "testing/engine_harness.h"

namespace pstrain::ps {
namespace {

using std::chrono::milliseconds;
using testing::DoneWith;
using testing::EngineHarness;

// Key 0 spans two pieces (kPieceBytes is 512 KiB), key 1 one.
constexpr int64_t kBig = 200000;

JobSpec Spec(Mode mode, int workers) {
  return testing::SgdSpec(mode, workers);
}

std::vector<at::Tensor> Params() {
  return {torch::zeros({kBig}).requires_grad_(),
          torch::zeros({3}).requires_grad_()};
}

std::vector<at::Tensor> Grads(float value) {
  return {torch::full({kBig}, value), torch::full({3}, value)};
}

float First(const EngineHarness& h, int key) {
  return const_cast<EngineHarness&>(h).server().params()[key][0].item<float>();
}

TEST(EngineTest, SyncStepsOnTheMeanOnceEveryWorkerPushed) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  EXPECT_EQ(h.server().version(), 0u);
  EXPECT_TRUE(h.ParamsTo(a).empty());  // held for the other worker
  ASSERT_TRUE(h.Push(b, 0, Grads(3), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(First(h, 0), -0.5f * 2);  // lr * mean(1, 3)
  EXPECT_FLOAT_EQ(First(h, 1), -1.0f);
  ASSERT_EQ(h.ParamsTo(a).size(), 1u);
  EXPECT_EQ(h.ParamsTo(a)[0].version, 1u);
  EXPECT_EQ(h.ParamsTo(a)[0].request_id, 10u);
  EXPECT_EQ(h.ParamsTo(b)[0].request_id, 11u);
}

// The write fence: a step may not change parameters that are being written
// straight from their storage.
TEST(EngineTest, NoStepWhileParametersAreOnTheWire) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 11).ok());
  h.RunPosts();  // version 1's keys stepped; its two params frames not yet
                 // written
  const float before = First(h, 1);
  ASSERT_TRUE(h.Push(a, 1, Grads(1), 12).ok());
  ASSERT_TRUE(h.Push(b, 1, Grads(1), 13).ok());
  h.RunPosts();
  EXPECT_EQ(h.server().version(), 1u) << "stepped under a params write";
  EXPECT_FLOAT_EQ(First(h, 1), before);
  h.Settle();
  EXPECT_EQ(h.server().version(), 2u);
  EXPECT_FLOAT_EQ(First(h, 1), before - 0.5f);
  EXPECT_EQ(h.ParamsTo(b).back().version, 2u);
}

TEST(EngineTest, ASecondPushForOneStepIsRefused) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1);
  h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  // The server names the push it refuses before reading its data.
  Status s = h.Push(a, 0, Grads(1), 11);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST(EngineTest, AWorkerLostMidPushLeavesTheStepToTheOthers) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(
      h.Push(b, 0, Grads(4), 11, true, /*pieces=*/1).ok());  // half of key 0
  h.Close(b);
  ASSERT_TRUE(h.Push(a, 0, Grads(2), 10).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  // Key 0's first piece is the mean of both; the rest only a's.
  EXPECT_FLOAT_EQ(First(h, 0), -0.5f * 3);
  EXPECT_FLOAT_EQ(h.server().params()[0][kBig - 1].item<float>(), -0.5f * 2);
  EXPECT_FLOAT_EQ(First(h, 1), -1.0f);
  EXPECT_EQ(h.engine().Stats(0, 0).workers_lost, 1u);
  EXPECT_EQ(h.ParamsTo(a).back().version, 1u);
}

TEST(EngineTest, ALostWorkerRejoinsTheStepUnderWay) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  h.Close(b);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u) << "the step waited for a lost worker";
  auto b2 = h.JoinWorker(2);  // no push of version 1 is in: it joins this step
  ASSERT_TRUE(h.Push(a, 1, Grads(1), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u) << "stepped without the rejoined worker";
  ASSERT_TRUE(h.Feed(b2, wire::Pull{0}, 12).ok());
  EXPECT_EQ(h.ParamsTo(b2).back().version, 1u);
  ASSERT_TRUE(h.Push(b2, 1, Grads(1), 13).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 2u);
  EXPECT_EQ(h.engine().Stats(0, 0).workers_lost, 1u);
}

TEST(EngineTest, ARankThatRejoinsAfterThePushesBeganWaitsForTheNextStep) {
  EngineHarness h(Spec(Mode::kSync, 3), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2), c = h.JoinWorker(3);
  h.Close(c);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  auto c2 = h.JoinWorker(3);
  ASSERT_TRUE(h.Feed(c2, wire::Pull{0}, 11).ok());
  EXPECT_TRUE(h.ParamsTo(c2).empty()) << "given a version it will not push to";
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 12).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  ASSERT_EQ(h.ParamsTo(c2).size(), 1u);
  EXPECT_EQ(h.ParamsTo(c2)[0].version, 1u);
}

TEST(EngineTest, ALossWhileParametersAreWrittenWaitsForTheWrite) {
  EngineHarness h(Spec(Mode::kSync, 3), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2), c = h.JoinWorker(3);
  for (auto p : {a, b, c})
    ASSERT_TRUE(h.Push(p, 0, Grads(1), 10).ok());
  h.RunPosts();
  ASSERT_TRUE(h.Push(a, 1, Grads(1), 11).ok());
  ASSERT_TRUE(h.Push(b, 1, Grads(1), 12).ok());
  h.Close(c);  // would close step 1, but version 1 is still being written
  EXPECT_EQ(h.server().version(), 1u);
  h.Settle();
  EXPECT_EQ(h.server().version(), 2u);
  EXPECT_EQ(h.ParamsTo(a).back().version, 2u);
}

TEST(EngineTest, ANaNPieceSkipsTheSyncStep) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  auto bad = Grads(1);
  bad[0][kBig - 1] =
      std::numeric_limits<float>::quiet_NaN();  // in key 0's second piece
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, bad, 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(First(h, 0), 0.0f);
  EXPECT_FLOAT_EQ(First(h, 1), 0.0f);
  auto stats = h.engine().Stats(0, 0);
  EXPECT_EQ(stats.refused_pushes, 1u);
  EXPECT_EQ(stats.discarded_steps, 1u);
  EXPECT_EQ(h.ParamsTo(b).back().version, 1u)
      << "the refused worker still gets its reply";
}

TEST(EngineTest, ANaNPushIsNotAppliedInAsync) {
  EngineHarness h(Spec(Mode::kAsync, 1), Params());
  auto a = h.JoinWorker(1);
  auto bad = Grads(1);
  bad[1][2] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(h.Push(a, 0, bad, 10).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 0u);
  EXPECT_FLOAT_EQ(First(h, 1), 0.0f);
  EXPECT_EQ(h.ParamsTo(a).size(), 1u);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
}

TEST(EngineTest, BackupWorkersCloseTheStepAndDropTheLatePush) {
  JobSpec spec = Spec(Mode::kSync, 3);
  spec.backup_workers = 1;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2), c = h.JoinWorker(3);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(First(h, 1), -1.0f);  // the mean of the two in
  ASSERT_TRUE(h.Push(c, 0, Grads(100), 12).ok());
  h.Settle();
  EXPECT_EQ(h.engine().steps().rule().dropped_pushes(), 1u);
  EXPECT_FLOAT_EQ(First(h, 1), -1.0f);
  EXPECT_EQ(h.ParamsTo(c).back().version, 1u)
      << "the late worker gets the new version";
}

TEST(EngineTest, AStepTimeoutClosesTheStepWithThePushesIn) {
  JobSpec spec = Spec(Mode::kSync, 2);
  spec.step_timeout = 0.5;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.outbox().wake.has_value());
  EXPECT_EQ(*h.outbox().wake - h.now(), milliseconds(500));
  h.Advance(milliseconds(499));
  h.engine().OnTimer(h.now());
  EXPECT_EQ(h.server().version(), 0u) << "closed early";
  h.Advance(milliseconds(1));
  h.engine().OnTimer(h.now());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_EQ(h.engine().Stats(0, 0).timed_out_steps, 1u);
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 11).ok());
  h.Settle();
  EXPECT_EQ(h.engine().steps().rule().dropped_pushes(), 1u);
}

TEST(EngineTest, AStepTimeoutDuringAParamsWriteWaitsForIt) {
  JobSpec spec = Spec(Mode::kSync, 2);
  spec.step_timeout = 0.5;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  h.Advance(milliseconds(500));
  ASSERT_TRUE(
      h.Feed(b, wire::Pull{0}, 11).ok());  // b's parameters are on the wire
  h.engine().OnTimer(h.now());
  EXPECT_EQ(h.server().version(), 0u) << "stepped under a params write";
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_EQ(h.engine().Stats(0, 0).timed_out_steps, 1u);
}

TEST(EngineTest, SspHoldsAWorkerAtTheStalenessBound) {
  JobSpec spec = Spec(Mode::kSsp, 2);
  spec.staleness = 1;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(
      h.Push(a, 0, Grads(1), 10).ok());  // a's clock 1: within 1 of b's 0
  h.Settle();
  EXPECT_EQ(h.ParamsTo(a).size(), 1u);
  ASSERT_TRUE(h.Push(a, 1, Grads(1), 11).ok());  // clock 2: two ahead
  h.Settle();
  EXPECT_EQ(h.ParamsTo(a).size(), 1u) << "ran past the bound";
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 12).ok());
  h.Settle();
  EXPECT_EQ(h.ParamsTo(a).size(), 2u);
  EXPECT_EQ(h.engine().Stats(0, 0).max_clock_gap, 1u);
}

TEST(EngineTest, ASilentSyncWorkerIsLostAfterDeadAfter) {
  JobSpec spec = Spec(Mode::kSync, 2);
  spec.dead_after = 1;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  for (int i = 0; i < 5; ++i)
    h.Tick();
  EXPECT_FALSE(h.ClosedFor(b)) << "lost before --dead_after";
  ASSERT_TRUE(h.Feed(b, wire::Heartbeat{}, 0).ok());  // word from b
  for (int i = 0; i < 5; ++i)
    h.Tick();
  EXPECT_FALSE(h.ClosedFor(b));
  h.Tick();
  auto closed = h.ClosedFor(b);
  ASSERT_TRUE(closed);
  EXPECT_EQ(closed->why.code(), StatusCode::kTimeout);
  EXPECT_FALSE(h.ClosedFor(a)) << "a has pushed: the step does not wait on it";
}

// A worker whose reply was held for the others longer than --dead_after
// waited on the server: its silence counts from its answer, not from its
// push, so it is not lost before its next word can come.
TEST(EngineTest, AWorkerAnsweredAfterALongHoldIsHeardFromItsAnswer) {
  JobSpec spec = Spec(Mode::kSync, 2);
  spec.dead_after = 1;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  for (int i = 0; i < 10; ++i) {  // two seconds; b beats, a waits
    if (i % 3 == 0) {
      ASSERT_TRUE(h.Feed(b, wire::Heartbeat{}, 0).ok());
    }
    h.Tick();
  }
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 11).ok());
  h.Settle();
  ASSERT_EQ(h.ParamsTo(a).size(), 1u);
  h.Tick();
  EXPECT_FALSE(h.ClosedFor(a)) << "lost for the time its reply was held";
  EXPECT_FALSE(h.ClosedFor(b));
}

TEST(EngineTest, ARegisteredWorkersHeartbeatHandsOnItsProgress) {
  JobSpec spec = Spec(Mode::kAsync, 2);
  EngineHarness h(spec, Params());
  std::vector<std::pair<int, std::string>> heard;
  h.engine().handshake().set_on_progress([&](int rank, std::string_view json) {
    heard.emplace_back(rank, std::string(json));
  });
  auto a = h.JoinWorker(2);
  ASSERT_TRUE(h.Feed(a, wire::Heartbeat{R"({"steps":3})"}, 0).ok());
  ASSERT_TRUE(h.Feed(a, wire::Heartbeat{}, 0).ok());            // no progress
  ASSERT_TRUE(h.Feed(a, wire::Heartbeat{"not json"}, 0).ok());  // not read
  // A worker past hello that has not registered is heard, not handed on.
  auto b = h.Accept();
  ASSERT_TRUE(h.Feed(b,
                     wire::Hello{wire::Role::kWorker, 1,
                                 static_cast<uint32_t>(spec.world_size)},
                     0)
                  .ok());
  ASSERT_TRUE(h.Feed(b, wire::Heartbeat{R"({"steps":9})"}, 0).ok());
  const std::vector<std::pair<int, std::string>> want = {{2, R"({"steps":3})"},
                                                         {2, "not json"}};
  EXPECT_EQ(heard, want);
  EXPECT_EQ(h.CountSent(a, wire::MsgType::kError), 0);  // nor answered
  EXPECT_EQ(h.CountSent(b, wire::MsgType::kError), 0);
}

TEST(EngineTest, TheServersOwnStallIsNobodysSilence) {
  JobSpec spec = Spec(Mode::kSync, 2);
  spec.dead_after = 1;
  EngineHarness h(spec, Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  h.Tick();
  h.Advance(milliseconds(5000));  // the server's thread was busy
  h.Tick();
  EXPECT_FALSE(h.ClosedFor(b));
  for (int i = 0; i < 6; ++i)
    h.Tick();
  EXPECT_TRUE(h.ClosedFor(b));
}

TEST(EngineTest, APeerWithoutHandshakeIsDroppedAfterTheTimeout) {
  EngineOptions options;
  options.timeout = milliseconds(1000);
  EngineHarness h(Spec(Mode::kAsync, 1), Params(), options);
  auto p = h.Accept();
  auto w = h.JoinWorker(1);
  auto step = [&](uint64_t i) {  // the job makes progress meanwhile
    ASSERT_TRUE(h.Push(w, i, Grads(1), 10 + i).ok());
    h.Settle();
    h.Tick();
  };
  for (int i = 0; i < 5; ++i)
    step(i);
  EXPECT_FALSE(h.ClosedFor(p));
  step(5);
  ASSERT_TRUE(h.ClosedFor(p));
  EXPECT_EQ(h.ClosedFor(p)->why.code(), StatusCode::kTimeout);
  EXPECT_FALSE(h.engine().stopping());
}

TEST(EngineTest, NoProgressForTheTimeoutFailsTheJobNamingWhoItWaitsFor) {
  EngineOptions options;
  options.timeout = milliseconds(1000);
  EngineHarness h(Spec(Mode::kSync, 2), Params(), options);
  auto a = h.JoinWorker(1);
  h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  for (int i = 0; i < 6; ++i)
    h.Tick();
  EXPECT_TRUE(h.engine().stopping());
  EXPECT_EQ(h.engine().failure().code(), StatusCode::kTimeout);
  EXPECT_NE(h.engine().failure().message().find("rank 2 to push version 0"),
            std::string::npos)
      << h.engine().failure().message();
  EXPECT_TRUE(h.outbox().shut_down);
}

TEST(EngineTest, EveryWorkerDoneEndsTheRun) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Feed(a, DoneWith(10), 20).ok());
  EXPECT_FALSE(h.engine().stopping());
  ASSERT_TRUE(h.Feed(b, DoneWith(30), 21).ok());
  EXPECT_TRUE(h.engine().stopping());
  EXPECT_TRUE(h.engine().failure().ok());
  EXPECT_EQ(h.engine().Stats(0, 0).samples, 40);
}

TEST(EngineTest, StopTrainingAnswersTheHeldRepliesWithStop) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1);
  h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  h.engine().StopTraining(h.now());
  ASSERT_EQ(h.ParamsTo(a).size(), 1u);
  EXPECT_TRUE(h.ParamsTo(a)[0].stop);
  EXPECT_EQ(h.ParamsTo(a)[0].version, 0u);
}

}  // namespace
}  // namespace pstrain::ps
