// The MasterDesk: rank 0 answers a worker's get_job once every server has
// said where it listens, refuses get_module for a built-in model, and
// gives a lost shard to a standby's claim or fails the job once no
// standby took it over in time.

#include "ps/engine/master_desk.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/job/job_spec.h"
#include "ps/job/shard_plan.h"
#include "testing/fake_outbox.h"

namespace pstrain::ps {
namespace {

Time MasterAt(double seconds) {
  return Time{} + std::chrono::duration_cast<EngineClock::duration>(
                      std::chrono::duration<double>(seconds));
}

// Rank 0 of two servers and two workers, --replicas 2 (server 1's standby
// is on rank 0), --dead_after 1 (a lost shard waits 2 s for its standby).
struct Master {
  Master() : desk(Spec(), std::chrono::seconds(10), &peers, &outbox) {
    std::vector<wire::KeySpec> keys = {{"a", wire::DType::kFloat32, {4}}};
    plan = *PlanShards(keys, 2, 1 << 20);
    desk.ExpectServers(&plan, {torch::zeros({4})});
    desk.set_address("h0:1");
  }
  static const JobSpec& Spec() {
    static const JobSpec spec = [] {
      JobSpec s;
      s.world_size = 4;
      s.num_servers = 2;
      s.replicas = 2;
      s.dead_after = 1.0;
      return s;
    }();
    return spec;
  }
  // Connection `id` said hello as `role` of rank `rank`.
  Peer& Join(PeerId id, Peer::Role role, int rank) {
    Peer& p = peers.Add(id, "p" + std::to_string(id), "", MasterAt(0));
    p.rank = rank;
    p.role = role;
    p.stage = Peer::Stage::kHello;
    if (role == Peer::Role::kServer)
      return peers.Become<ServerPeer>(p);
    if (role == Peer::Role::kTool)
      return peers.Become<ToolPeer>(p);
    return peers.Become<WorkerPeer>(p, rank - 2);
  }

  ShardPlan plan;
  PeerTable peers;
  testing::FakeOutbox outbox;
  MasterDesk desk;
};

// The claim of peer 11 (request 12), rank 0's standby, won shard 1.
void ExpectRankZeroAdmittedAsServerOne(
    const std::vector<MasterDesk::Admission>& admitted) {
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].peer, 11u);
  EXPECT_EQ(admitted[0].rank, 1);
  EXPECT_EQ(admitted[0].process, 0);
  EXPECT_EQ(admitted[0].request_id, 12u);
}

TEST(MasterDeskTest, AWorkersJobWaitsForEveryServersAddress) {
  Master m;
  Peer& worker = m.Join(5, Peer::Role::kWorker, 2);
  ASSERT_TRUE(m.desk.OnGetJob(worker, 7).ok());
  EXPECT_TRUE(m.outbox.sent.empty());  // server 1 has not said where yet
  ServerPeer& server = *AsServer(m.Join(6, Peer::Role::kServer, 1));
  m.desk.Hello(server, 1, MasterAt(0));
  std::string meta;
  wire::EncodeMeta(wire::ServerInfo{"h1:2"}, &meta);
  ASSERT_TRUE(m.desk.OnServerInfo(server, 8, meta, MasterAt(40)).ok());
  ASSERT_EQ(m.outbox.sent.size(), 2u);
  EXPECT_EQ(m.outbox.sent[0].type, wire::MsgType::kAck);
  EXPECT_EQ(m.outbox.sent[0].request_id, 8u);
  const auto& job = m.outbox.sent[1];
  EXPECT_EQ(job.type, wire::MsgType::kJobSpec);
  // It waited for the answer: its silence counts from it.
  EXPECT_EQ(worker.last_heard, MasterAt(40));
  EXPECT_EQ(job.request_id, 7u);
  EXPECT_NE(job.meta.find("\"h0:1\""), std::string::npos);
  EXPECT_NE(job.meta.find("\"h1:2\""), std::string::npos);
  EXPECT_EQ(m.desk.OnServerInfo(server, 9, meta, MasterAt(41)).message(),
            "second server_info");
  EXPECT_EQ(m.desk.OnGetModule(worker, 10).message(),
            "get_module: the job trains the built-in model net, no module");
}

TEST(MasterDeskTest, ALostShardNoStandbyClaimsFailsTheJobAfterTheWait) {
  Master m;
  ServerPeer& server = *AsServer(m.Join(6, Peer::Role::kServer, 1));
  m.desk.Hello(server, 1, MasterAt(0));
  m.desk.Lose(server, Unavailable("reset"), MasterAt(1));
  EXPECT_TRUE(m.desk.CheckLost(MasterAt(2.5)).ok());
  Status lost = m.desk.CheckLost(MasterAt(3.5));
  EXPECT_EQ(lost.code(), StatusCode::kUnavailable);
  EXPECT_EQ(lost.message(),
            "shard 1 is lost: rank 1 (server) died and no standby took it "
            "over within 2 s (--replicas 2)");
}

TEST(MasterDeskTest, AStandbysClaimIsAdmittedAsTheLostRank) {
  Master m;
  ServerPeer& server = *AsServer(m.Join(6, Peer::Role::kServer, 1));
  m.desk.Hello(server, 1, MasterAt(0));
  m.desk.Lose(server, Status::Ok(), MasterAt(1));
  m.desk.Disconnect(server, false);
  Peer& standby = m.peers.Add(11, "s", "", MasterAt(1));
  wire::Hello claim{wire::Role::kServer, 1, 4, wire::Claim::kCopy, 0, 9};
  ASSERT_TRUE(m.desk.OnClaim(standby, 12, claim, false).ok());
  // Rank 0 is the shard's only standby, and it claimed: decided at once.
  ExpectRankZeroAdmittedAsServerOne(m.desk.TakeAdmissions());
  EXPECT_FALSE(m.desk.claiming(11));
  ASSERT_FALSE(m.outbox.info.empty());
  EXPECT_EQ(m.outbox.info.back(),
            "rank 1's shard goes to rank 0's standby, at version 9 (the "
            "highest of 1 claim)");
  EXPECT_TRUE(m.desk.TakeAdmissions().empty());  // handed out once
}

// A server that sends heartbeats and then says nothing for --dead_after
// (stopped, or its host cut off, while its kernel answers probes) is
// refused with a line naming its term, and closed; one that never beat
// (an older server), or whose final shard is coming in, is not.
TEST(MasterDeskTest, ASilentServerIsFencedWithItsTerm) {
  Master m;
  ServerPeer& server = *AsServer(m.Join(6, Peer::Role::kServer, 1));
  m.desk.Hello(server, 1, MasterAt(0));
  m.desk.FenceSilent(MasterAt(5));
  EXPECT_TRUE(m.outbox.closed.empty());  // it never beat: not watched
  server.beats = true;
  server.last_heard = MasterAt(5);
  m.desk.FenceSilent(MasterAt(6));  // silent for exactly --dead_after
  EXPECT_TRUE(m.outbox.closed.empty());
  server.shard_coming = true;
  m.desk.FenceSilent(MasterAt(9));
  EXPECT_TRUE(m.outbox.closed.empty());
  server.shard_coming = false;
  m.desk.FenceSilent(MasterAt(6.5));
  ASSERT_EQ(m.outbox.closed.size(), 1u);
  EXPECT_EQ(m.outbox.closed[0].peer, 6u);
  EXPECT_EQ(m.outbox.closed[0].request_id, 0u);
  EXPECT_EQ(m.outbox.closed[0].why.code(), StatusCode::kUnavailable);
  EXPECT_EQ(m.outbox.closed[0].why.message(),
            "rank 0 heard nothing from rank 1 for 1 s (--dead_after): its "
            "term 1 as server 1 is over");
  EXPECT_TRUE(server.closing);
  m.desk.FenceSilent(MasterAt(8));
  EXPECT_EQ(m.outbox.closed.size(), 1u);  // once
}

// Each takeover of a shard is a new term, the first server's rank taking
// it back included (--rejoin): a term names one process's time serving it.
TEST(MasterDeskTest, EachTakeoverOfAShardIsANewTerm) {
  Master m;
  ServerPeer& first = *AsServer(m.Join(6, Peer::Role::kServer, 1));
  m.desk.Hello(first, 1, MasterAt(0));
  EXPECT_EQ(m.desk.roster().term(1), 1u);
  m.desk.Lose(first, Status::Ok(), MasterAt(1));
  m.desk.Disconnect(first, false);
  ServerPeer& standby = *AsServer(m.Join(7, Peer::Role::kServer, 1));
  m.desk.Hello(standby, 0, MasterAt(1));
  EXPECT_EQ(m.desk.roster().term(1), 2u);
  EXPECT_EQ(m.desk.roster().process(1), 0);
  m.desk.Lose(standby, Status::Ok(), MasterAt(2));
  m.desk.Disconnect(standby, false);
  ServerPeer& back = *AsServer(m.Join(8, Peer::Role::kServer, 1));
  m.desk.Hello(back, 1, MasterAt(2));
  EXPECT_EQ(m.desk.roster().term(1), 3u);
  EXPECT_EQ(m.desk.roster().process(1), 1);
}

// A successor of rank 0: server 1 has not rejoined it yet when its
// standby claims shard 1. The claim is held: if server 1 says hello, it
// is refused (the standby copies again); if server 1 stays unheard of for
// the takeover wait (2 s) from the first tick, it died with the old
// master, and the claim wins.
// A successor's first tick at 0, and rank 0's standby's claim of shard 1
// at version 9 (peer 11, request 12), which it holds.
void ClaimAtASuccessor(Master& m) {
  m.desk.Succeed();
  ASSERT_TRUE(m.desk.CheckLost(MasterAt(0)).ok());
  Peer& standby = m.peers.Add(11, "s", "", MasterAt(0));
  wire::Hello claim{wire::Role::kServer, 1, 4, wire::Claim::kCopy, 0, 9};
  ASSERT_TRUE(m.desk.OnClaim(standby, 12, claim, false).ok());
}

TEST(MasterDeskTest, ASuccessorHoldsAClaimUntilTheServerRejoins) {
  Master m;
  ASSERT_NO_FATAL_FAILURE(ClaimAtASuccessor(m));
  EXPECT_TRUE(m.desk.claiming(11));
  ServerPeer& server = *AsServer(m.Join(6, Peer::Role::kServer, 1));
  m.desk.Hello(server, 1, MasterAt(1));
  EXPECT_FALSE(m.desk.claiming(11));
  ASSERT_EQ(m.outbox.closed.size(), 1u);
  EXPECT_EQ(m.outbox.closed[0].peer, 11u);
  EXPECT_EQ(m.outbox.closed[0].request_id, 12u);
  EXPECT_EQ(m.outbox.closed[0].why.message(),
            "rank 1 is already connected: its server rejoined this master");
  EXPECT_TRUE(m.desk.CheckLost(MasterAt(5)).ok());
  EXPECT_TRUE(m.desk.TakeAdmissions().empty());
}

TEST(MasterDeskTest, ASuccessorGivesAnUnheardShardToItsClaimAfterTheWait) {
  Master m;
  ASSERT_NO_FATAL_FAILURE(ClaimAtASuccessor(m));
  ASSERT_TRUE(m.desk.CheckLost(MasterAt(1.9)).ok());
  EXPECT_TRUE(m.desk.TakeAdmissions().empty());  // it may yet rejoin
  ASSERT_TRUE(m.desk.CheckLost(MasterAt(2.1)).ok());
  ExpectRankZeroAdmittedAsServerOne(m.desk.TakeAdmissions());
  EXPECT_TRUE(m.desk.roster().lost(1));  // until the winner says hello
}

// Rank 0 itself (no Succeed) refuses a claim of a shard that is not lost.
TEST(MasterDeskTest, RankZeroRefusesAClaimOfAShardNotLost) {
  Master m;
  ASSERT_TRUE(m.desk.CheckLost(MasterAt(0)).ok());
  Peer& standby = m.peers.Add(11, "s", "", MasterAt(0));
  wire::Hello claim{wire::Role::kServer, 1, 4, wire::Claim::kCopy, 0, 9};
  EXPECT_EQ(m.desk.OnClaim(standby, 12, claim, false).message(),
            "rank 1's shard is not lost: rank 0's standby has nothing to "
            "claim");
}

}  // namespace
}  // namespace pstrain::ps
