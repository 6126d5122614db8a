// --replicas: rank 0 gives a lost shard to the highest copy among its
// standbys' claims, waits for every standby it sees alive before it
// chooses, refuses a claim without a copy, and ends the run naming the
// shard when no copy survives. Rank 0 is an Engine over fakes; each
// standby's claim is a hello as the lost rank, fed in the order the test
// says.

#include "ps/engine/shard_claims.h"

#include <optional>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/engine.h"
#include "ps/engine/master_desk.h"
#include "testing/engine_harness.h"
#include "wire/messages.h"

namespace pstrain::ps {
namespace {

using testing::EngineHarness;

TEST(ShardClaimsTest, TheHighestVersionComesFirstAndTheEarliestAmongEquals) {
  ShardClaims claims;
  claims.Add(1, {10, 1, 2, 5});
  claims.Add(1, {11, 1, 0, 7});
  claims.Add(1, {12, 1, 1, 7});
  claims.Add(2, {13, 1, 0, 9});
  claims.AddNoCopy(1, 3);
  EXPECT_TRUE(claims.Heard(1, 2));
  EXPECT_TRUE(claims.Heard(1, 3));
  EXPECT_FALSE(claims.Heard(2, 2));
  EXPECT_EQ(claims.NoCopy(1), std::vector<int>{3});
  claims.Withdraw(13);
  EXPECT_FALSE(claims.Waiting(2));
  EXPECT_TRUE(claims.Claiming(12));
  const auto taken = claims.Take(1);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].peer, 11u);
  EXPECT_EQ(taken[1].peer, 12u);
  EXPECT_EQ(taken[2].peer, 10u);
  EXPECT_FALSE(claims.Waiting(1));
  EXPECT_FALSE(claims.Heard(1, 3));  // forgotten with the shard
}

std::vector<at::Tensor> Params() {
  return {torch::zeros({3}).requires_grad_(),
          torch::zeros({5}).requires_grad_()};
}

// Rank 0 of 3 servers (ranks 0, 1, 2) and 2 workers: the standbys of
// shard 1 are on rank 2 and, with --replicas 3, on rank 0 too.
class StandbyClaimsTest : public ::testing::Test {
 protected:
  explicit StandbyClaimsTest(int replicas) : h_(SpecOf(replicas), Params()) {
    std::vector<wire::KeySpec> keys = {{"a", wire::DType::kFloat32, {3}},
                                       {"b", wire::DType::kFloat32, {5}}};
    plan_ = *PlanShards(keys, 3, 1 << 20);
    h_.engine().master().ExpectServers(&plan_, Params());
    one_ = Server(1, "h:1");
    two_ = Server(2, "h:2");
  }
  static JobSpec SpecOf(int replicas) {
    JobSpec s = testing::SgdSpec(Mode::kSync, 2);
    s.replicas = replicas;
    s.num_servers = 3;
    s.world_size = 5;
    s.dead_after = 2;  // a lost shard waits 4 s for a claim
    s.heartbeat = 1;
    return s;
  }
  PeerId Server(int rank, const std::string& address) {
    const PeerId p = h_.Accept();
    EXPECT_TRUE(h_.Feed(p,
                        wire::Hello{wire::Role::kServer,
                                    static_cast<uint32_t>(rank), 5},
                        1)
                    .ok());
    EXPECT_TRUE(h_.Feed(p, wire::ServerInfo{address}, 2).ok());
    return p;
  }
  // Rank `by`'s standby claims shard `shard`, holding `version` (none:
  // no copy).
  PeerId Claim(int shard, int by, std::optional<uint64_t> version) {
    const PeerId p = h_.Accept();
    EXPECT_TRUE(
        h_.Feed(
              p,
              wire::Hello{wire::Role::kServer, static_cast<uint32_t>(shard), 5,
                          version ? wire::Claim::kCopy : wire::Claim::kNoCopy,
                          static_cast<uint32_t>(by), version.value_or(0)},
              3)
            .ok());
    return p;
  }
  bool Granted(PeerId claim) const {
    return h_.CountSent(claim, wire::MsgType::kHello) == 1 &&
           !h_.ClosedFor(claim).has_value();
  }
  std::string Refusal(PeerId claim) const {
    const auto closed = h_.ClosedFor(claim);
    return closed ? closed->why.message() : "(not refused)";
  }
  void TickFor(int seconds) {
    for (int i = 0; i < seconds * 5; ++i)  // kTick is 200 ms
      h_.Tick();
  }

  EngineHarness h_;
  ShardPlan plan_;
  PeerId one_ = 0, two_ = 0;
};

class StandbyClaimsOfTwoTest : public StandbyClaimsTest {
 protected:
  StandbyClaimsOfTwoTest() : StandbyClaimsTest(2) {}
};

class StandbyClaimsOfThreeTest : public StandbyClaimsTest {
 protected:
  StandbyClaimsOfThreeTest() : StandbyClaimsTest(3) {}
};

// --replicas 2: rank 1 dies and rank 2's standby takes shard 1 over; rank 1
// starts again with --rejoin and begins a whole copy of shard 1; rank 2
// dies before that copy lands. Rank 1's standby claims shard 1 without a
// copy: refused, and the run ends naming the shard instead of training it
// again from version 0. Rank 0's own standby takes shard 2 over.
TEST_F(StandbyClaimsOfTwoTest,
       AClaimWithoutACopyIsRefusedAndTheRunEndsNamingTheShard) {
  h_.Close(one_);
  const PeerId first = Claim(1, 2, 40);
  ASSERT_TRUE(Granted(first)) << Refusal(first);
  ASSERT_TRUE(h_.Feed(first, wire::ServerInfo{"h:9"}, 4).ok());
  h_.Close(two_);  // rank 2's process: its own shard and shard 1
  h_.Close(first);
  const PeerId rejoined = Claim(1, 1, std::nullopt);
  EXPECT_FALSE(Granted(rejoined));
  EXPECT_EQ(Refusal(rejoined),
            "rank 1's standby holds no copy of rank 1's shard: it cannot take "
            "it over");
  const PeerId zero = Claim(2, 0, 41);
  ASSERT_TRUE(Granted(zero)) << Refusal(zero);
  ASSERT_TRUE(h_.Feed(zero, wire::ServerInfo{"h:0"}, 4).ok());
  TickFor(3);
  EXPECT_FALSE(h_.engine().stopping());  // a copy may still come
  TickFor(2);
  ASSERT_TRUE(h_.engine().stopping());
  EXPECT_EQ(h_.engine().failure().message(),
            "shard 1 is lost: rank 1 (server) died and no standby holds a "
            "copy of it (rank 1's standby had none) (--replicas 2)");
  EXPECT_EQ(h_.engine().master().roster().address(1), "");
}

// --replicas 2: the rank started again holds a copy when rank 2 dies: it
// takes shard 1 back at once, no other standby being alive to wait for.
TEST_F(StandbyClaimsOfTwoTest, ARejoinedStandbyWithACopyTakesItsShardBack) {
  h_.Close(one_);
  const PeerId first = Claim(1, 2, 40);
  ASSERT_TRUE(Granted(first));
  ASSERT_TRUE(h_.Feed(first, wire::ServerInfo{"h:9"}, 4).ok());
  h_.Close(two_);
  h_.Close(first);
  const PeerId rejoined = Claim(1, 1, 52);
  EXPECT_TRUE(Granted(rejoined)) << Refusal(rejoined);
}

// --replicas 3: rank 2's standby, held at version 40 while rank 0's
// acknowledgements released 42, claims first. It must not win while rank
// 0's standby, alive, is still to claim; rank 0's later copy wins, and
// rank 2's is told why.
TEST_F(StandbyClaimsOfThreeTest,
       TheHighestCopyWinsThoughALowerOneClaimedFirst) {
  h_.Close(one_);
  const PeerId low = Claim(1, 2, 40);
  EXPECT_EQ(h_.CountSent(low, wire::MsgType::kHello), 0);  // waits
  EXPECT_FALSE(h_.ClosedFor(low).has_value());
  const PeerId high = Claim(1, 0, 42);
  EXPECT_TRUE(Granted(high)) << Refusal(high);
  EXPECT_EQ(Refusal(low),
            "rank 0's standby holds a later copy of rank 1's shard (version "
            "42, rank 2's 40)");
  // A claim after the choice finds the shard served.
  const PeerId late = Claim(1, 2, 41);
  EXPECT_EQ(Refusal(late).rfind("rank 1 is already connected", 0), 0u)
      << Refusal(late);
}

TEST_F(StandbyClaimsOfThreeTest, TheHigherCopyWinsWhenItClaimsFirstToo) {
  h_.Close(one_);
  const PeerId high = Claim(1, 0, 42);
  EXPECT_EQ(h_.CountSent(high, wire::MsgType::kHello), 0);  // rank 2 alive
  const PeerId low = Claim(1, 2, 40);
  EXPECT_TRUE(Granted(high)) << Refusal(high);
  EXPECT_FALSE(Granted(low));
}

// --replicas 3: the standby that was waited for dies, or claims without a
// copy: the copy in hand wins then, and not before.
TEST_F(StandbyClaimsOfThreeTest, AClaimWinsOnceNoStandbyThatMayHoldMoreIsLeft) {
  h_.Close(one_);
  const PeerId zero = Claim(1, 0, 40);
  EXPECT_FALSE(Granted(zero));
  h_.Close(two_);  // rank 2's process is gone, and its copy with it
  EXPECT_TRUE(Granted(zero)) << Refusal(zero);
}

TEST_F(StandbyClaimsOfThreeTest, AStandbyWithoutACopyIsNotWaitedFor) {
  h_.Close(one_);
  const PeerId zero = Claim(1, 0, 40);
  EXPECT_FALSE(Granted(zero));
  const PeerId two = Claim(1, 2, std::nullopt);
  EXPECT_FALSE(Granted(two));
  EXPECT_TRUE(Granted(zero)) << Refusal(zero);
}

// --replicas 3: rank 2 is alive but its standby never claims (it ended):
// past twice --dead_after the claim in hand wins, and the run goes on.
TEST_F(StandbyClaimsOfThreeTest, AtTheDeadlineTheHighestClaimInHandWins) {
  h_.Close(one_);
  const PeerId zero = Claim(1, 0, 40);
  TickFor(3);
  EXPECT_FALSE(Granted(zero));
  TickFor(2);
  EXPECT_TRUE(Granted(zero)) << Refusal(zero);
  ASSERT_TRUE(h_.Feed(zero, wire::ServerInfo{"h:0"}, 4).ok());
  TickFor(5);
  EXPECT_FALSE(h_.engine().stopping()) << h_.engine().failure().message();
}

// A claim that closes while it waits is withdrawn; a plain hello as a lost
// rank (a server started again without --rejoin) is refused.
TEST_F(StandbyClaimsOfThreeTest,
       AWithdrawnClaimNeverWinsAndALostRankCannotSimplyReturn) {
  h_.Close(one_);
  const PeerId zero = Claim(1, 0, 44);
  h_.Close(zero);
  const PeerId two = Claim(1, 2, 40);
  EXPECT_FALSE(Granted(two));  // rank 0's standby may claim again
  const PeerId again = h_.Accept();
  ASSERT_TRUE(h_.Feed(again, wire::Hello{wire::Role::kServer, 1, 5}, 1).ok());
  EXPECT_EQ(Refusal(again),
            "rank 1's shard is lost and waits for its standby; a server "
            "started again rejoins with --rejoin");
  const PeerId zero_again = Claim(1, 0, 44);
  EXPECT_TRUE(Granted(zero_again)) << Refusal(zero_again);
  EXPECT_FALSE(Granted(two));
}

}  // namespace
}  // namespace pstrain::ps
