// The update rules: each rule's properties (RuleTraits) as values, what its
// object answers, and what becomes of a push refused for a NaN or Inf, at
// the Engine with a fake outbox and a clock the test moves. No sockets, no
// sleeps.

#include "ps/rules/update_rule.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "testing/engine_harness.h"

namespace pstrain::ps {
namespace {

using std::chrono::milliseconds;
using testing::EngineHarness;

JobSpec Spec(Mode mode, int workers) {
  return testing::SgdSpec(mode, workers);
}

JobSpec BackupSpec(int workers, int backup_workers) {
  JobSpec spec = Spec(Mode::kSync, workers);
  spec.backup_workers = backup_workers;
  return spec;
}

JobSpec TimeoutSpec(int workers, double step_timeout) {
  JobSpec spec = Spec(Mode::kSync, workers);
  spec.step_timeout = step_timeout;
  return spec;
}

std::vector<at::Tensor> Params() {
  return {torch::zeros({3}).requires_grad_()};
}

std::vector<at::Tensor> Grads(float value) {
  return {torch::full({3}, value)};
}

std::vector<at::Tensor> NanGrads() {
  auto g = Grads(1);
  g[0][2] = std::numeric_limits<float>::quiet_NaN();
  return g;
}

float First(EngineHarness& h) {
  return h.server().params()[0][0].item<float>();
}

// The line the Engine logged about a refused push ("" if none).
std::string RefusalLine(EngineHarness& h) {
  for (const auto& line : h.outbox().info) {
    if (line.rfind("refused the push of rank ", 0) == 0)
      return line;
  }
  return "";
}

void ExpectSameTraits(const RuleTraits& a, const RuleTraits& b,
                      const std::string& rule) {
  EXPECT_EQ(a.applies_each_push, b.applies_each_push) << rule;
  EXPECT_EQ(a.buffers_pushes, b.buffers_pushes) << rule;
  EXPECT_EQ(a.waits_for_every_member, b.waits_for_every_member) << rule;
  EXPECT_EQ(a.reply_awaits_step, b.reply_awaits_step) << rule;
  EXPECT_EQ(a.bounds_staleness, b.bounds_staleness) << rule;
  EXPECT_EQ(a.rejoin_awaits_next_version, b.rejoin_awaits_next_version) << rule;
  EXPECT_EQ(a.snapshot_versions_agree, b.snapshot_versions_agree) << rule;
  EXPECT_EQ(a.snapshot_lead, b.snapshot_lead) << rule;
  EXPECT_EQ(a.step_timeout, b.step_timeout) << rule;
  EXPECT_STREQ(a.refused_push_outcome, b.refused_push_outcome) << rule;
}

struct Expected {
  const char* rule;
  JobSpec spec;
  RuleTraits traits;
};

// Each rule's traits, every field in declaration order: applies_each_push,
// buffers_pushes, waits_for_every_member, reply_awaits_step,
// bounds_staleness, rejoin_awaits_next_version, snapshot_versions_agree,
// snapshot_lead, step_timeout, refused_push_outcome.
TEST(RuleTraitsTest, EachRulesTraitsAreItsOwn) {
  JobSpec ssp = Spec(Mode::kSsp, 2);
  ssp.staleness = 2;
  const Expected expected[] = {
      {"streaming sync",
       Spec(Mode::kSync, 2),
       {false, false, true, true, false, true, true, 3, 0.0,
        "the step is skipped"}},
      {"buffered sync (backup)",
       BackupSpec(3, 1),
       {false, true, true, true, false, true, true, 3, 0.0,
        "it is left out of the step"}},
      {"buffered sync (timeout)",
       TimeoutSpec(2, 2.5),
       {false, true, true, true, false, true, true, 3, 2.5,
        "it is left out of the step"}},
      {"async",
       Spec(Mode::kAsync, 2),
       {true, true, false, false, false, false, false, 1, 0.0,
        "it is not applied"}},
      {"ssp",
       ssp,
       {true, true, false, false, true, false, false, 1, 0.0,
        "it is not applied"}},
  };
  for (const auto& e : expected)
    ExpectSameTraits(RuleTraitsOf(e.spec), e.traits, e.rule);
}

struct NamedSpec {
  const char* rule;
  JobSpec spec;
};

std::vector<NamedSpec> EveryRule() {
  JobSpec ssp = Spec(Mode::kSsp, 2);
  ssp.staleness = 1;
  return {{"streaming sync", Spec(Mode::kSync, 2)},
          {"buffered sync (backup)", BackupSpec(2, 1)},
          {"buffered sync (timeout)", TimeoutSpec(2, 2.5)},
          {"async", Spec(Mode::kAsync, 2)},
          {"ssp", ssp}};
}

// The rule MakeUpdateRule makes has the traits RuleTraitsOf gives.
TEST(UpdateRuleTest, EachRuleAnswersTheTraitsOfItsJob) {
  for (const auto& [rule, spec] : EveryRule()) {
    ParameterServer server(spec, Params());
    auto r = MakeUpdateRule(spec, &server);
    ExpectSameTraits(r->traits(), RuleTraitsOf(spec), rule);
    EXPECT_EQ(r->has_quorum(), r->traits().waits_for_every_member) << rule;
    EXPECT_EQ(r->bounds_staleness(), r->traits().bounds_staleness) << rule;
    EXPECT_EQ(r->step_timeout(), spec.step_timeout) << rule;
  }
}

TEST(UpdateRuleTest, SyncRepliesAndRejoinsAwaitTheNextVersion) {
  for (const JobSpec& spec :
       {Spec(Mode::kSync, 2), BackupSpec(2, 1), TimeoutSpec(2, 1)}) {
    ParameterServer server(spec, Params());
    auto r = MakeUpdateRule(spec, &server);
    EXPECT_EQ(r->ReplyVersion(4), 5u);
    EXPECT_EQ(r->RejoinPullVersion(7, /*joins_this_step=*/false), 8u);
    EXPECT_EQ(r->RejoinPullVersion(7, /*joins_this_step=*/true), 0u);
    EXPECT_TRUE(r->has_quorum());
    EXPECT_FALSE(r->bounds_staleness());
  }
}

TEST(UpdateRuleTest, AsyncAndSspReplyWithTheCurrentParameters) {
  for (Mode mode : {Mode::kAsync, Mode::kSsp}) {
    const JobSpec spec = Spec(mode, 2);
    ParameterServer server(spec, Params());
    auto r = MakeUpdateRule(spec, &server);
    EXPECT_EQ(r->ReplyVersion(4), 0u) << ModeName(mode);
    EXPECT_EQ(r->RejoinPullVersion(7, false), 0u) << ModeName(mode);
    EXPECT_EQ(r->RejoinPullVersion(7, true), 0u) << ModeName(mode);
    EXPECT_FALSE(r->has_quorum()) << ModeName(mode);
    EXPECT_EQ(r->bounds_staleness(), mode == Mode::kSsp) << ModeName(mode);
    EXPECT_EQ(r->step_timeout(), 0.0) << ModeName(mode);
  }
}

// Streaming sync: the refused push's finite pieces are in the sums, so the
// step closes with no optimizer step.
TEST(RefusedPushTest, StreamingSyncSkipsTheStep) {
  EngineHarness h(Spec(Mode::kSync, 2), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, NanGrads(), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(First(h), 0.0f);
  EXPECT_EQ(h.engine().Stats(0, 0).discarded_steps, 1u);
  EXPECT_EQ(RefusalLine(h),
            "refused the push of rank 2 for version 0: key 0 (k0) holds NaN "
            "or Inf; the step is skipped");
}

// Buffered sync with a backup worker: the step closes on the other push,
// which alone makes it (lr 0.5: 0 - 0.5 * 1).
TEST(RefusedPushTest, BufferedSyncLeavesThePushOutOfTheStep) {
  EngineHarness h(BackupSpec(2, 1), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, NanGrads(), 10).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 0u) << "the refused push closed the step";
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(First(h), -0.5f);
  EXPECT_EQ(h.engine().Stats(0, 0).discarded_steps, 0u);
  EXPECT_EQ(h.engine().Stats(0, 0).refused_pushes, 1u);
  EXPECT_EQ(RefusalLine(h),
            "refused the push of rank 1 for version 0: key 0 (k0) holds NaN "
            "or Inf; it is left out of the step");
  EXPECT_EQ(h.ParamsTo(a).back().version, 1u)
      << "the refused worker gets the step's parameters";
}

// Buffered sync by --step_timeout: the step waits for its time, then
// closes with the finite push alone.
TEST(RefusedPushTest, StepTimeoutClosesTheStepWithoutTheRefusedPush) {
  EngineHarness h(TimeoutSpec(2, 0.5), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(2), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, NanGrads(), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 0u);
  h.Advance(milliseconds(500));
  h.engine().OnTimer(h.now());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(First(h), -1.0f);
  EXPECT_EQ(h.engine().Stats(0, 0).discarded_steps, 0u);
  EXPECT_EQ(RefusalLine(h),
            "refused the push of rank 2 for version 0: key 0 (k0) holds NaN "
            "or Inf; it is left out of the step");
}

// Async and ssp: the push makes no version, and the next one does.
TEST(RefusedPushTest, AsyncAndSspDoNotApplyThePush) {
  for (Mode mode : {Mode::kAsync, Mode::kSsp}) {
    EngineHarness h(Spec(mode, 1), Params());
    auto a = h.JoinWorker(1);
    ASSERT_TRUE(h.Push(a, 0, NanGrads(), 10).ok());
    h.Settle();
    EXPECT_EQ(h.server().version(), 0u) << ModeName(mode);
    EXPECT_FLOAT_EQ(First(h), 0.0f) << ModeName(mode);
    EXPECT_EQ(RefusalLine(h),
              "refused the push of rank 1 for version 0: key 0 (k0) holds NaN "
              "or Inf; it is not applied")
        << ModeName(mode);
    ASSERT_TRUE(h.Push(a, 0, Grads(1), 11).ok());
    h.Settle();
    EXPECT_EQ(h.server().version(), 1u) << ModeName(mode);
    EXPECT_FLOAT_EQ(First(h), -0.5f) << ModeName(mode);
  }
}

}  // namespace
}  // namespace pstrain::ps
