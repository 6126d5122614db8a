// --replicas: a server answers workers only with versions its standbys
// hold (a standby's snapshot request acknowledges the version before it),
// stops waiting for a standby that disconnects, and a server that took a
// shard over answers a push it has already applied without applying it.

#include <cstring>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/engine.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "testing/engine_harness.h"
#include "wire/messages.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;

std::vector<at::Tensor> Params() {
  return {torch::zeros({3}).requires_grad_(),
          torch::zeros({5}).requires_grad_()};
}

std::vector<at::Tensor> Grads(float value) {
  return {torch::full({3}, value), torch::full({5}, value)};
}

JobSpec Spec() {
  JobSpec s = testing::SgdSpec(Mode::kSync, 2);
  s.replicas = 2;
  return s;
}

// A standby connects as a tool and asks for the first version >= `min`.
PeerId JoinStandby(EngineHarness& h) {
  const PeerId standby = h.Accept();
  EXPECT_TRUE(h.Feed(standby,
                     wire::Hello{wire::Role::kTool, 0,
                                 static_cast<uint32_t>(Spec().world_size)},
                     1)
                  .ok());
  return standby;
}

Status Ask(EngineHarness& h, PeerId standby, uint64_t min, uint64_t id) {
  return h.Feed(standby, wire::Snapshot{min, true, true}, id);
}

TEST(StandbyEngineTest, RepliesWaitUntilTheStandbyHoldsTheirVersion) {
  EngineHarness h(Spec(), Params());
  const PeerId standby = JoinStandby(h);
  ASSERT_TRUE(Ask(h, standby, 0, 2).ok());  // its first copy: version 0
  EXPECT_EQ(h.CountSent(standby, wire::MsgType::kShard), 1);
  ASSERT_TRUE(Ask(h, standby, 1, 3).ok());  // holds 0, waits for 1
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 1u);
  // Version 1 went to the standby; the workers wait for its ack.
  EXPECT_EQ(h.CountSent(standby, wire::MsgType::kShard), 2);
  EXPECT_TRUE(h.ParamsTo(a).empty());
  EXPECT_TRUE(h.ParamsTo(b).empty());
  ASSERT_TRUE(Ask(h, standby, 2, 4).ok());  // holds 1
  h.Settle();
  ASSERT_EQ(h.ParamsTo(a).size(), 1u);
  EXPECT_EQ(h.ParamsTo(a)[0].version, 1u);
  ASSERT_EQ(h.ParamsTo(b).size(), 1u);
  EXPECT_EQ(h.ParamsTo(b)[0].version, 1u);
}

TEST(StandbyEngineTest, AStandbyThatDisconnectsIsNoLongerWaitedFor) {
  EngineHarness h(Spec(), Params());
  const PeerId standby = JoinStandby(h);
  ASSERT_TRUE(Ask(h, standby, 0, 2).ok());
  ASSERT_TRUE(Ask(h, standby, 1, 3).ok());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3), 11).ok());
  h.Settle();
  EXPECT_TRUE(h.ParamsTo(a).empty());
  h.Close(standby);
  h.Settle();
  ASSERT_EQ(h.ParamsTo(a).size(), 1u);
  EXPECT_EQ(h.ParamsTo(a)[0].version, 1u);
}

// A standby that took the shard over at version 1: one worker had its
// reply of version 1 from the dead primary, the other had not and sends
// its push for version 0 again.
TEST(StandbyEngineTest, APushForAVersionMadeAlreadyIsAnsweredNotApplied) {
  EngineHarness h(Spec(), Params());
  h.server().set_version(1);
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(b, 0, Grads(100), 10).ok());
  h.Settle();
  ASSERT_EQ(h.ParamsTo(b).size(), 1u);
  EXPECT_EQ(h.ParamsTo(b)[0].version, 1u);
  EXPECT_EQ(h.server().params()[0][0].item<float>(), 0.0f);  // not applied
  EXPECT_EQ(h.server().pushes(), 0u);
  ASSERT_TRUE(h.Push(a, 1, Grads(1), 11).ok());
  ASSERT_TRUE(h.Push(b, 1, Grads(3), 12).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 2u);
  EXPECT_FLOAT_EQ(h.server().params()[0][0].item<float>(), -0.5f * 2.0f);
  EXPECT_EQ(h.ParamsTo(a).back().version, 2u);
}

// Async: the standby's copy named the last push applied from each worker;
// one that names that version or an older one is answered, not applied.
TEST(StandbyEngineTest, AnAsyncPushAppliedAlreadyIsAnsweredNotApplied) {
  JobSpec spec = Spec();
  spec.mode = Mode::kAsync;
  EngineHarness h(spec, Params());
  ASSERT_TRUE(h.engine().steps().set_applied({4, -1}).ok());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 4, Grads(100), 10).ok());
  h.Settle();
  EXPECT_EQ(h.server().pushes(), 0u);
  EXPECT_EQ(h.server().params()[0][0].item<float>(), 0.0f);
  ASSERT_EQ(h.ParamsTo(a).size(), 1u);
  ASSERT_TRUE(h.Push(b, 0, Grads(1), 11).ok());  // b has none applied
  ASSERT_TRUE(h.Push(a, 5, Grads(1), 12).ok());
  h.Settle();
  EXPECT_EQ(h.server().pushes(), 2u);
  EXPECT_EQ(h.engine().steps().rule().applied(), (std::vector<int64_t>{5, 0}));
}

// A standby's copy carries, after the optimizer state, each worker's last
// applied push.
TEST(StandbyEngineTest, AStandbysCopyCarriesTheAppliedPushes) {
  JobSpec spec = Spec();
  spec.mode = Mode::kAsync;
  EngineHarness h(spec, Params());
  ASSERT_TRUE(h.engine().steps().set_applied({7, -1}).ok());
  const PeerId standby = JoinStandby(h);
  ASSERT_TRUE(Ask(h, standby, 0, 2).ok());
  const testing::FakeOutbox::Sent* shard = nullptr;
  for (const auto& sent : h.outbox().sent) {
    if (sent.peer == standby && sent.type == wire::MsgType::kShard)
      shard = &sent;
  }
  ASSERT_NE(shard, nullptr);
  wire::Shard msg;
  ASSERT_TRUE(wire::DecodeMeta(shard->meta, &msg).ok());
  ASSERT_EQ(msg.params.size(), 4u);  // 2 keys, optimizer state, applied
  EXPECT_EQ(msg.params[3].nbytes, 16u);
  ASSERT_EQ(shard->data.size(), 4u);
  const auto* applied = static_cast<const int64_t*>(shard->data[3].data);
  EXPECT_EQ(applied[0], 7);
  EXPECT_EQ(applied[1], -1);
}

// Replication after aggregation: a standby that asked with the replay
// flag before the version was made gets the step's record, which replayed
// on its copy of version 0 gives version 1 bit for bit; one that asks after
// gets the whole shard.
TEST(StandbyEngineTest, AStandbyThatAskedInTimeGetsTheStepsRecord) {
  EngineHarness h(Spec(), Params());
  ParameterServer copy(Spec(), Params());
  const PeerId standby = JoinStandby(h);
  ASSERT_TRUE(Ask(h, standby, 0, 2).ok());
  ASSERT_TRUE(h.Feed(standby, wire::Snapshot{1, true, true, true}, 3).ok());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3), 11).ok());
  h.Settle();
  ASSERT_EQ(h.CountSent(standby, wire::MsgType::kStepRecord), 1);
  const testing::FakeOutbox::Sent& sent = h.outbox().sent.back();
  ASSERT_EQ(sent.type, wire::MsgType::kStepRecord);
  wire::StepRecord msg;
  ASSERT_TRUE(wire::DecodeMeta(sent.meta, &msg).ok());
  EXPECT_EQ(msg.version, 1u);
  ASSERT_EQ(msg.params.size(), 4u);  // 2 keys, the lr, applied
  ASSERT_EQ(sent.data.size(), 4u);
  std::vector<at::Tensor> values;
  for (int k = 0; k < 2; ++k) {
    values.push_back(
        torch::from_blob(const_cast<void*>(sent.data[k].data), {k == 0 ? 3 : 5})
            .clone());
  }
  EXPECT_TRUE(values[0].equal(torch::full({3}, 2.0f)));  // the mean
  double lr = 0;
  ASSERT_EQ(sent.data[2].bytes, sizeof(lr));
  std::memcpy(&lr, sent.data[2].data, sizeof(lr));
  copy.Replay(values, lr);
  EXPECT_TRUE(copy.params()[0].equal(h.server().params()[0]));
  EXPECT_TRUE(copy.params()[1].equal(h.server().params()[1]));
  EXPECT_FALSE(copy.params()[0].equal(torch::zeros({3})));
  // Asked again while the standby holds 0, the record is kept; without
  // the replay flag, version 1 comes whole.
  ASSERT_TRUE(h.Feed(standby, wire::Snapshot{1, true, true, true}, 4).ok());
  EXPECT_EQ(h.outbox().sent.back().type, wire::MsgType::kStepRecord);
  ASSERT_TRUE(h.Feed(standby, wire::Snapshot{1, true, true, false}, 5).ok());
  EXPECT_EQ(h.outbox().sent.back().type, wire::MsgType::kShard);
}

// The record of the step that made a version, from a sent frame.
struct SentRecord {
  uint64_t version = 0;
  std::vector<at::Tensor> values;
  double lr = 0;
};

SentRecord RecordOf(const testing::FakeOutbox::Sent& sent) {
  SentRecord r;
  wire::StepRecord msg;
  EXPECT_TRUE(wire::DecodeMeta(sent.meta, &msg).ok());
  r.version = msg.version;
  for (int k = 0; k < 2; ++k) {
    r.values.push_back(
        torch::from_blob(const_cast<void*>(sent.data[k].data), {k == 0 ? 3 : 5})
            .clone());
  }
  std::memcpy(&r.lr, sent.data[2].data, sizeof(r.lr));
  return r;
}

// Async: each push makes a version, and both are made before the standby
// asks for the first; their records are kept until it holds them, and it
// replays one after the other into the primary's bits.
TEST(StandbyEngineTest, RecordsOfVersionsMadeBeforeTheStandbyAskedAreKept) {
  JobSpec spec = Spec();
  spec.mode = Mode::kAsync;
  EngineHarness h(spec, Params());
  ParameterServer copy(spec, Params());
  const PeerId standby = JoinStandby(h);
  ASSERT_TRUE(Ask(h, standby, 0, 2).ok());
  auto a = h.JoinWorker(1), b = h.JoinWorker(2);
  ASSERT_TRUE(h.Push(a, 0, Grads(1), 10).ok());
  ASSERT_TRUE(h.Push(b, 0, Grads(3), 11).ok());
  h.Settle();
  EXPECT_EQ(h.server().version(), 2u);
  for (uint64_t v : {1, 2}) {
    ASSERT_TRUE(
        h.Feed(standby, wire::Snapshot{v, true, true, true}, 3 + v).ok());
    ASSERT_EQ(h.outbox().sent.back().type, wire::MsgType::kStepRecord) << v;
    const SentRecord r = RecordOf(h.outbox().sent.back());
    EXPECT_EQ(r.version, v);
    copy.Replay(r.values, r.lr);
  }
  EXPECT_TRUE(copy.params()[0].equal(h.server().params()[0]));
  EXPECT_TRUE(copy.params()[1].equal(h.server().params()[1]));
  // Holding 2, it has no use for them: an old request comes whole.
  ASSERT_TRUE(h.Feed(standby, wire::Snapshot{3, true, true, true}, 6).ok());
  ASSERT_TRUE(h.Feed(standby, wire::Snapshot{1, true, true, true}, 7).ok());
  EXPECT_EQ(h.outbox().sent.back().type, wire::MsgType::kShard);
}

TEST(StandbyEngineTest, WithoutReplicasAnOldPushIsStillRefused) {
  JobSpec spec = Spec();
  spec.replicas = 1;
  EngineHarness h(spec, Params());
  h.server().set_version(1);
  auto b = h.JoinWorker(2);
  Status s = h.Push(b, 0, Grads(1), 10);
  EXPECT_EQ(s.message(), "push for version 0 while the server is at version 1");
  EXPECT_TRUE(h.ParamsTo(b).empty());
}

}  // namespace
}  // namespace pstrain::ps

namespace pstrain::ps {
namespace {

// Rank 0 of 3 servers with --replicas 2: server 1 is lost and a standby
// takes its shard over, as rank 1, once rank 0 has seen the old one go.
class TakeoverTest : public ::testing::Test {
 protected:
  TakeoverTest() : h_(SpecOf(), Params()) {
    std::vector<wire::KeySpec> keys = {{"a", wire::DType::kFloat32, {3}},
                                       {"b", wire::DType::kFloat32, {5}}};
    plan_ = *PlanShards(keys, 3, 1 << 20);
    h_.engine().master().ExpectServers(&plan_, Params());
  }
  static JobSpec SpecOf() {
    JobSpec s = Spec();
    s.num_servers = 3;
    s.world_size = 5;
    s.dead_after = 2;
    s.heartbeat = 1;
    return s;
  }
  // A server's hello, or with `claim` rank 2's standby's claim of the
  // rank's shard at version 3.
  PeerId Server(int rank, uint64_t id, Status* said,
                wire::Claim claim = wire::Claim::kNone) {
    const PeerId p = h_.Accept();
    *said =
        h_.Feed(p,
                wire::Hello{wire::Role::kServer, static_cast<uint32_t>(rank), 5,
                            claim, claim == wire::Claim::kNone ? 0u : 2u, 3},
                id);
    return p;
  }
  EngineHarness h_;
  ShardPlan plan_;
};

TEST_F(TakeoverTest, OnlyOneRankServesAShardAndAStandbyMayTakeOver) {
  Status said;
  const PeerId one = Server(1, 1, &said);
  ASSERT_TRUE(said.ok());
  ASSERT_TRUE(h_.Feed(one, wire::ServerInfo{"h:1"}, 2).ok());
  const PeerId two = Server(2, 3, &said);
  ASSERT_TRUE(h_.Feed(two, wire::ServerInfo{"h:2"}, 4).ok());
  // A standby claiming rank 1 while rank 1 is connected: refused.
  const PeerId claim = Server(1, 5, &said, wire::Claim::kCopy);
  EXPECT_EQ(h_.CountSent(claim, wire::MsgType::kHello), 0);
  const auto refused = h_.ClosedFor(claim);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->why.message().rfind("rank 1 is already connected", 0), 0u)
      << refused->why.message();
  h_.Close(one);
  EXPECT_FALSE(h_.engine().stopping());  // waits for a standby
  EXPECT_EQ(h_.engine().master().roster().address(1), "");
  const PeerId standby = Server(1, 6, &said, wire::Claim::kCopy);
  ASSERT_EQ(h_.CountSent(standby, wire::MsgType::kHello), 1);
  ASSERT_TRUE(h_.Feed(standby, wire::ServerInfo{"h:9"}, 7).ok());
  EXPECT_EQ(h_.engine().master().roster().address(1), "h:9");
  for (int i = 0; i < 40; ++i)  // 8 s, past twice --dead_after
    h_.Tick();
  EXPECT_FALSE(h_.engine().stopping());
}

TEST_F(TakeoverTest, AShardNobodyTakesOverEndsTheJobNamingIt) {
  Status said;
  const PeerId one = Server(1, 1, &said);
  ASSERT_TRUE(h_.Feed(one, wire::ServerInfo{"h:1"}, 2).ok());
  const PeerId two = Server(2, 3, &said);
  ASSERT_TRUE(h_.Feed(two, wire::ServerInfo{"h:2"}, 4).ok());
  h_.Close(one);
  for (int i = 0; i < 19; ++i)  // 3.8 s: within twice --dead_after
    h_.Tick();
  EXPECT_FALSE(h_.engine().stopping());
  for (int i = 0; i < 2; ++i)
    h_.Tick();
  ASSERT_TRUE(h_.engine().stopping());
  const auto closed = h_.ClosedFor(two);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->why.message(),
            "shard 1 is lost: rank 1 (server) died and no standby took it "
            "over within 4 s (--replicas 2)");
}

}  // namespace
}  // namespace pstrain::ps
