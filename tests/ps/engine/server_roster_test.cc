#include "ps/engine/server_roster.h"

#include <cstring>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {
namespace {

// Two float32 keys, [4] and [6], whole, over `servers` servers.
struct Model {
  explicit Model(int servers) {
    std::vector<wire::KeySpec> keys = {{"a", wire::DType::kFloat32, {4}},
                                       {"b", wire::DType::kFloat32, {6}}};
    plan = *PlanShards(keys, servers, 1 << 20);
    params = {torch::zeros({4}), torch::zeros({6})};
  }
  ShardPlan plan;
  std::vector<at::Tensor> params;
};

std::unique_ptr<ServerPeer> Server(int rank) {
  Peer common;
  common.rank = rank;
  common.role = Peer::Role::kServer;
  return std::make_unique<ServerPeer>(std::move(common));
}

// Server s's shard message: its slices' descriptors, then `state` bytes.
std::string ShardMeta(const Model& m, int s, uint64_t state, bool with_state) {
  wire::Shard msg;
  const std::vector<at::Tensor> views = SliceViews(m.plan, s, m.params);
  for (size_t k = 0; k < views.size(); ++k)
    msg.params.push_back(DescribeTensor(static_cast<uint32_t>(k), views[k]));
  if (with_state)
    msg.params.push_back(
        DescribeBytes(static_cast<uint32_t>(views.size()), state));
  std::string meta;
  wire::EncodeMeta(msg, &meta);
  return meta;
}

// Rank 0 expecting server 1, whose connection has said hello.
class TwoServersTest : public ::testing::Test {
 protected:
  TwoServersTest() : m(2), server(Server(1)) {
    roster.Expect(&m.plan, 2, m.params);
    roster.Hello(1, server.get());
  }
  Model m;
  ServerRoster roster;
  std::unique_ptr<ServerPeer> server;
};

TEST(ServerRosterTest, ExpectingNoneAnswersAsIfAllWereDone) {
  ServerRoster roster;
  EXPECT_FALSE(roster.expecting());
  EXPECT_EQ(roster.plan(), nullptr);
  EXPECT_TRUE(roster.all_announced());
  EXPECT_TRUE(roster.all_shards_in());
  EXPECT_TRUE(roster.MissingAddresses().empty());
  EXPECT_TRUE(roster.MissingShards().empty());
}

TEST(ServerRosterTest, AnnouncedAddressesGoToTheWorkers) {
  Model m(3);
  ServerRoster roster;
  roster.Expect(&m.plan, 3, m.params);
  roster.set_own_address("h:7000");
  EXPECT_TRUE(roster.expecting());
  EXPECT_FALSE(roster.all_announced());
  EXPECT_EQ(roster.MissingAddresses(), (std::vector<int>{1, 2}));
  ASSERT_TRUE(roster.Announce(1, "h:7001").ok());
  EXPECT_EQ(roster.address(1), "h:7001");
  EXPECT_EQ(roster.Announce(1, "h:7009").message(), "second server_info");
  Status bad = roster.Announce(2, "nohost");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "server_info: address 'nohost', expected host:port");
  EXPECT_EQ(roster.MissingAddresses(), (std::vector<int>{2}));
  ASSERT_TRUE(roster.Announce(2, "h:7002").ok());
  EXPECT_TRUE(roster.all_announced());
  EXPECT_EQ(roster.addresses(),
            (std::vector<std::string>{"h:7000", "h:7001", "h:7002"}));
  EXPECT_EQ(roster.address(0), "");
}

TEST_F(TwoServersTest, ShardLandsInTheModelAndItsOptimizerState) {
  EXPECT_FALSE(roster.all_shards_in());
  EXPECT_EQ(roster.MissingShards(), (std::vector<int>{1}));
  const std::vector<at::Tensor> views = SliceViews(m.plan, 1, m.params);
  ASSERT_FALSE(views.empty());
  std::vector<MutableSpan> buffers;
  ASSERT_TRUE(
      roster.PlanShard(*server, ShardMeta(m, 1, 5, true), &buffers).ok());
  ASSERT_EQ(buffers.size(), views.size() + 1);
  for (size_t k = 0; k < views.size(); ++k) {
    EXPECT_EQ(buffers[k].data, views[k].data_ptr());
    EXPECT_EQ(buffers[k].bytes, views[k].nbytes());
  }
  ASSERT_EQ(buffers.back().bytes, 5u);
  std::memcpy(buffers.back().data, "state", 5);
  static_cast<float*>(buffers[0].data)[0] = 2.5f;
  roster.ShardIn(*server);
  EXPECT_TRUE(server->shard_in);
  EXPECT_TRUE(roster.all_shards_in());
  EXPECT_TRUE(roster.MissingShards().empty());
  EXPECT_EQ(roster.optimizer_state(1), "state");
  EXPECT_EQ(views[0].flatten()[0].item<float>(), 2.5f);
  Status again = roster.PlanShard(*server, ShardMeta(m, 1, 5, true), &buffers);
  EXPECT_EQ(again.message(), "second shard");
  roster.Disconnect(1, server.get());
  EXPECT_EQ(roster.MissingShards(), (std::vector<int>{1}));
}

TEST_F(TwoServersTest, ShardWithoutItsOptimizerStateIsCorrupt) {
  const size_t n = SliceViews(m.plan, 1, m.params).size();
  std::vector<MutableSpan> buffers;
  Status s = roster.PlanShard(*server, ShardMeta(m, 1, 0, false), &buffers);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.message(), "shard carries " + std::to_string(n) +
                             " tensors, expected " + std::to_string(n + 1) +
                             " (the slices and the optimizer state)");
  EXPECT_FALSE(server->shard_in);
  EXPECT_FALSE(roster.all_shards_in());
}

}  // namespace
}  // namespace pstrain::ps

namespace pstrain::ps {
namespace {

// --replicas: a lost server is unannounced until its standby says where it
// listens, and counts as lost until then.
TEST_F(TwoServersTest, ALostServerWaitsUnannouncedForItsStandby) {
  ASSERT_TRUE(roster.Announce(1, "h:1").ok());
  ASSERT_TRUE(roster.all_announced());
  const Time t0{};
  roster.Disconnect(1, server.get());
  roster.Lose(1, t0);
  EXPECT_FALSE(roster.all_announced());
  EXPECT_TRUE(roster.lost(1));
  EXPECT_EQ(roster.address(1), "");
  EXPECT_EQ(roster.LostBefore(t0), -1);  // not yet past its wait
  EXPECT_EQ(roster.LostBefore(t0 + std::chrono::seconds(1)), 1);
  auto standby = Server(1);
  roster.Hello(1, standby.get());
  ASSERT_TRUE(roster.Announce(1, "h:2").ok());
  EXPECT_TRUE(roster.all_announced());
  EXPECT_FALSE(roster.lost(1));
  EXPECT_EQ(roster.address(1), "h:2");
  EXPECT_EQ(roster.LostBefore(t0 + std::chrono::hours(1)), -1);
  EXPECT_EQ(roster.Announce(1, "h:3").message(), "second server_info");
}

TEST_F(TwoServersTest, KnowsWhoseFinalShardIsIn) {
  EXPECT_FALSE(roster.shard_in(1));
  std::vector<MutableSpan> buffers;
  ASSERT_TRUE(
      roster.PlanShard(*server, ShardMeta(m, 1, 3, true), &buffers).ok());
  roster.ShardIn(*server);
  EXPECT_TRUE(roster.shard_in(1));
  EXPECT_FALSE(roster.shard_in(0));
}

}  // namespace
}  // namespace pstrain::ps

namespace pstrain::ps {
namespace {

// A rank is seen alive while some shard's connection is its own, or one it
// took over; rank 0 always.
TEST(ServerRosterTest, ARankIsAliveWhileItServesAShard) {
  Model m(3);
  ServerRoster roster;
  roster.Expect(&m.plan, 3, m.params);
  auto one = Server(1), two = Server(2), taken = Server(1);
  roster.Hello(1, one.get());
  roster.Hello(2, two.get());
  EXPECT_TRUE(roster.alive(0));
  EXPECT_TRUE(roster.alive(1));
  roster.Disconnect(1, one.get());
  roster.Lose(1, Time{});
  EXPECT_FALSE(roster.alive(1));
  roster.Hello(1, taken.get());
  roster.Claimed(1, 2, Time{} + std::chrono::seconds(5));
  EXPECT_FALSE(roster.alive(1));  // shard 1 is rank 2's now
  EXPECT_EQ(roster.LostBefore(Time{} + std::chrono::seconds(5)), -1);
  EXPECT_EQ(roster.LostBefore(Time{} + std::chrono::seconds(6)), 1);
  roster.Disconnect(2, two.get());
  EXPECT_TRUE(roster.alive(2));  // through shard 1
  roster.Disconnect(1, taken.get());
  EXPECT_FALSE(roster.alive(2));
}

}  // namespace
}  // namespace pstrain::ps
