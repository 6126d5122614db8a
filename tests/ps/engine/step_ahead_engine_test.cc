// Streaming sync steps each key once every member's pieces of it are in,
// before the step closes, and starts the replies then, keys in the order
// the pushes brought them; what it computes is what the close would.

#include <chrono>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "net/send_gate.h"
#include "ps/engine/engine.h"
#include "ps/engine/membership.h"
#include "ps/engine/step_driver.h"
#include "ps/rules/update_rule.h"
#include "testing/engine_harness.h"
#include "wire/messages.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;

// Key 0 spans two pieces, keys 1 and 2 one each.
constexpr int64_t kBig = 200000;

std::vector<at::Tensor> Params() {
  return {torch::zeros({kBig}).requires_grad_(),
          torch::zeros({3}).requires_grad_(),
          torch::zeros({5}).requires_grad_()};
}

std::vector<at::Tensor> Grads(float value) {
  return {torch::full({kBig}, value), torch::full({3}, value),
          torch::full({5}, value)};
}

JobSpec Spec() {
  JobSpec s = testing::SgdSpec(Mode::kSync, 2);
  s.momentum = 0.9;  // state per key, which ahead must keep right
  return s;
}

const std::vector<int> kBackward = {2, 1, 0};  // the order pushes bring

// The params frames sent to `peer`, decoded.
std::vector<wire::Params> Replies(EngineHarness& h, PeerId peer) {
  std::vector<wire::Params> out;
  for (const auto& s : h.outbox().sent) {
    if (s.peer != peer || s.type != wire::MsgType::kParams)
      continue;
    wire::Params p;
    EXPECT_TRUE(wire::DecodeMeta(s.meta, &p).ok());
    out.push_back(p);
  }
  return out;
}

TEST(StepAheadTest, AKeyIsSteppedAndAWholePushsReplyStartsBeforeTheStepCloses) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1.0f), 10, true, -1, kBackward).ok());
  EXPECT_TRUE(Replies(h, a).empty());  // nothing is final yet
  // Worker b's first key (key 2) only.
  ASSERT_TRUE(h.Push(b, 0, Grads(3.0f), 11, true, 1, kBackward).ok());
  const StepOrder& order = h.engine().steps().rule().step_order();
  EXPECT_EQ(h.server().version(), 0u);
  EXPECT_TRUE(order.stepped(2));
  EXPECT_FALSE(order.stepped(1));
  EXPECT_FLOAT_EQ(h.server().params()[2][0].item<float>(), -0.5f * 2.0f);
  EXPECT_FLOAT_EQ(h.server().params()[1][0].item<float>(), 0.0f);
  // a's reply is out, as of version 1, keys in the pushes' order, each
  // key's bytes waiting on its place in that order; b's waits for its own
  // push, so that a's has the link to itself meanwhile.
  EXPECT_TRUE(Replies(h, b).empty());
  for (PeerId peer : {a}) {
    auto replies = Replies(h, peer);
    ASSERT_EQ(replies.size(), 1u) << peer;
    EXPECT_EQ(replies[0].version, 1u);
    ASSERT_EQ(replies[0].params.size(), 3u);
    EXPECT_EQ(replies[0].params[0].key, 2u);
    EXPECT_EQ(replies[0].params[2].key, 0u);
  }
  const auto& sent = h.outbox().sent.back();
  ASSERT_EQ(sent.data.size(), 3u);
  EXPECT_EQ(sent.data[0].mark, 1u);
  EXPECT_EQ(sent.data[2].mark, 3u);
  EXPECT_TRUE(sent.gated);
}

// A held reply started by a piece is timed at that piece's arrival: the
// wait a worker's reply had is the time between its push and the piece
// that started the step, not an earlier input's.
TEST(StepAheadTest, AReplyStartedByAPieceCountsItsWaitUpToThatPiece) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1.0f), 10, true, -1, kBackward).ok());
  h.Settle();
  ASSERT_TRUE(Replies(h, a).empty());
  h.Advance(std::chrono::milliseconds(3000));
  ASSERT_TRUE(h.Push(b, 0, Grads(3.0f), 11, true, 1, kBackward).ok());
  ASSERT_EQ(Replies(h, a).size(), 1u);
  EXPECT_DOUBLE_EQ(h.engine().members().waiting_seconds_now(), 3.0);
}

// --priority: the reply is tagged, and a key updated ahead of one before
// it in the order leaves at once; without, it waits for that one. A tagged
// reply keeps --send_window bytes unsent at most, as a push does, so that
// it keeps its order in the kernel too, and waits for its host's pushes
// to other hosts (--push_first).
TEST(StepAheadTest, ATaggedReplySendsEachSteppedKeyWithoutWaitingForTheOrder) {
  for (bool priority : {true, false}) {
    JobSpec spec = Spec();
    spec.priority = priority;
    EngineHarness h(spec, Params());
    auto a = h.JoinWorker(1), b = h.JoinWorker(2);
    ASSERT_TRUE(h.PushTagged(a, 0, Grads(1.0f), 10, {2, 1, 0}).ok());
    // b's key 1 only: key 0, first in the order, is not stepped.
    ASSERT_TRUE(h.PushTagged(b, 0, Grads(3.0f), 11, {1}).ok());
    ASSERT_TRUE(h.engine().steps().rule().step_order().stepped(1));
    ASSERT_FALSE(h.engine().steps().rule().step_order().stepped(0));
    const auto& sent = h.outbox().sent.back();
    ASSERT_EQ(sent.type, wire::MsgType::kParams);
    ASSERT_NE(sent.gate, nullptr);
    EXPECT_EQ(sent.tagged, priority);
    EXPECT_EQ(sent.send_window, priority ? spec.send_window : 0u);
    // It carries version 1, which ends round 0: pushes of round 0 first.
    EXPECT_EQ(Replies(h, a).back().version, 1u);
    EXPECT_EQ(sent.after_pushes_below, priority ? 1u : 0u);
    ASSERT_EQ(sent.data.size(), 3u);
    EXPECT_EQ(sent.data[1].mark, 2u);  // key 1
    EXPECT_EQ(sent.gate->is_open(2), priority) << priority;
    EXPECT_FALSE(sent.gate->is_open(1)) << priority;
    EXPECT_FALSE(sent.gate->is_open(3)) << priority;
  }
}

// Three steps of two whole pushes: the parameters are one process's SGD
// with momentum on the mean gradients.
TEST(StepAheadTest, SteppingAheadComputesWhatTheCloseWould) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  for (uint64_t v = 0; v < 3; ++v) {
    ASSERT_TRUE(
        h.Push(a, v, Grads(1.0f + v), 10 + v, true, -1, kBackward).ok());
    ASSERT_TRUE(h.Push(b, v, Grads(3.0f), 20 + v, true, -1, kBackward).ok());
    h.Settle();
    EXPECT_EQ(h.server().version(), v + 1);
    EXPECT_EQ(Replies(h, a).size(), v + 1);
    EXPECT_EQ(Replies(h, b).size(), v + 1);
    EXPECT_EQ(Replies(h, b).back().version, v + 1);
  }
  // One process's three SGD steps with momentum on the mean gradients
  // 2, 2.5, 3: v = 0.9 v + g, p -= 0.5 v.
  float vel = 0, p = 0;
  for (float g : {2.0f, 2.5f, 3.0f}) {
    vel = 0.9f * vel + g;
    p -= 0.5f * vel;
  }
  for (int k = 0; k < 3; ++k)
    EXPECT_FLOAT_EQ(h.server().params()[k][0].item<float>(), p) << k;
  EXPECT_FLOAT_EQ(h.server().params()[0][kBig - 1].item<float>(), p);
}

TEST(StepAheadTest, ARefusedPieceStopsSteppingAheadAndTheRestStays) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1.0f), 10, true, -1, kBackward).ok());
  auto bad = Grads(3.0f);
  bad[1][0] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(h.Push(b, 0, bad, 11, true, -1, kBackward).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_EQ(h.engine().steps().rule().discarded_steps(), 1u);
  // Key 2 came in whole before the refused piece, and kept its step.
  EXPECT_FLOAT_EQ(h.server().params()[2][0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(h.server().params()[1][0].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(h.server().params()[0][0].item<float>(), 0.0f);
  EXPECT_EQ(Replies(h, a).back().version, 1u);
  EXPECT_TRUE(h.engine().steps().rule().version_complete());
}

// A key whose last piece comes after another worker's refused piece is not
// updated ahead, even while the refused push is still being read: the step
// is skipped from the refused piece on, and no reply of it starts.
TEST(StepAheadTest, NoKeyIsSteppedAheadAfterARefusedPiece) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  auto bad = Grads(3.0f);
  bad[1][0] = std::numeric_limits<float>::quiet_NaN();
  // b's key 2, then its refused key 1; the rest of its push never comes.
  ASSERT_TRUE(h.Push(b, 0, bad, 11, true, 2, kBackward).ok());
  // a's push makes key 2 final after b's refused piece.
  ASSERT_TRUE(h.Push(a, 0, Grads(1.0f), 10, true, -1, kBackward).ok());
  EXPECT_FALSE(h.engine().steps().rule().step_order().stepped(2));
  EXPECT_FLOAT_EQ(h.server().params()[2][0].item<float>(), 0.0f);
  EXPECT_TRUE(Replies(h, a).empty());
}

TEST(StepAheadTest, ALostWorkerLetsTheOthersKeysStep) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1.0f), 10, true, -1, kBackward).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3.0f), 11, true, 1, kBackward).ok());
  EXPECT_TRUE(h.engine().steps().rule().step_order().stepped(2));
  h.Close(b);
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  // Key 2 is the mean of both; keys 0 and 1 have a's gradient alone.
  EXPECT_FLOAT_EQ(h.server().params()[2][0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(h.server().params()[1][0].item<float>(), -0.5f);
  EXPECT_FLOAT_EQ(h.server().params()[0][5].item<float>(), -0.5f);
  ASSERT_EQ(Replies(h, a).size(), 1u);
  EXPECT_EQ(Replies(h, a)[0].version, 1u);
}

// A stop (a target reached) that comes while replies of the next version
// are out lets the step close first; the pushes after it are answered
// with the stop, and change nothing.
TEST(StepAheadTest, AStopMidStepLetsTheStepCloseFirst) {
  EngineHarness h(Spec(), Params());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1.0f), 10, true, -1, kBackward).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3.0f), 11, true, 1, kBackward).ok());
  h.engine().StopTraining(h.now());
  EXPECT_EQ(h.server().version(), 0u);
  EXPECT_FALSE(Replies(h, a)[0].stop);
  h.Close(b);  // b's push never completes: the step closes without it
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_TRUE(h.engine().steps().rule().version_complete());
  const float p0 = h.server().params()[0][0].item<float>();
  ASSERT_TRUE(h.Push(a, 1, Grads(5.0f), 12, true, -1, kBackward).ok());
  h.Settle();
  auto replies = Replies(h, a);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_TRUE(replies[1].stop);
  EXPECT_EQ(h.server().version(), 1u);
  EXPECT_FLOAT_EQ(h.server().params()[0][0].item<float>(), p0);
}

}  // namespace
}  // namespace pstrain::ps
