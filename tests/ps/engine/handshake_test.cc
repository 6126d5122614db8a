// The Handshake: which hello may join as which rank, the worker's
// register against the server's keys, and the typed peer it admits.

#include "ps/engine/handshake.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/server_roster.h"
#include "ps/job/tensor_codec.h"
#include "ps/store/parameter_server.h"
#include "testing/engine_harness.h"
#include "testing/fake_outbox.h"

namespace pstrain::ps {
namespace {

// One server and two workers (ranks 1, 2), no token.
struct Gate {
  Gate()
      : spec(testing::SgdSpec(Mode::kSync, 2)),
        params{torch::zeros({3}).requires_grad_()},
        store(spec, params),
        formats(spec, {KeySpecOf("w", params[0])}, store),
        members(1, 2),
        watch(std::chrono::seconds(10), 0),
        handshake(spec, "", &formats, &peers, &watch, &outbox) {}

  std::string HelloMeta(wire::Role role, uint32_t rank, uint32_t world) {
    std::string meta;
    wire::EncodeMeta(wire::Hello{role, rank, world}, &meta);
    return meta;
  }
  Status Hello(PeerId id, wire::Role role, uint32_t rank, uint32_t world = 3) {
    Peer* peer = peers.Find(id);
    return handshake
        .ReadHello(*peer, HelloMeta(role, rank, world), roster, false)
        .status();
  }

  JobSpec spec;
  std::vector<at::Tensor> params;
  ParameterServer store;
  KeyFormats formats;
  PeerTable peers;
  Membership members;
  PeerWatch watch;
  ServerRoster roster;
  testing::FakeOutbox outbox;
  Handshake handshake;
};

TEST(HandshakeTest, AHelloJoinsOnlyAsARankItsRoleMayHave) {
  Gate g;
  g.handshake.Accept(1, "a", Time{});
  EXPECT_TRUE(g.Hello(1, wire::Role::kWorker, 2).ok());
  EXPECT_EQ(g.Hello(1, wire::Role::kWorker, 0).message(),
            "--rank 0 is not a worker rank of --world_size 3 --num_servers 1 "
            "(expected 1..2)");
  Status world = g.Hello(1, wire::Role::kWorker, 1, 4);
  EXPECT_EQ(world.code(), StatusCode::kIncompatible);
  EXPECT_EQ(world.message(),
            "--world_size mismatch: rank 1 has 4, the server (rank 0) has 3");
  EXPECT_EQ(g.Hello(1, wire::Role::kServer, 1).message(),
            "a server cannot join; expected a worker");
  EXPECT_TRUE(g.Hello(1, wire::Role::kTool, 0).ok());
  EXPECT_EQ(g.Hello(1, wire::Role::kTool, 1).message(),
            "a tool may join only as rank 0, not 1");
}

TEST(HandshakeTest, OneConnectionPerRankAndOneHelloPerConnection) {
  Gate g;
  g.handshake.Accept(1, "10.0.0.1:5", Time{});
  g.handshake.Accept(2, "10.0.0.2:6", Time{});
  Peer& first = g.handshake.Admit(*g.peers.Find(1), wire::Role::kWorker, 2, 9);
  EXPECT_NE(AsWorker(first), nullptr);
  EXPECT_EQ(AsWorker(first)->worker, 1);
  ASSERT_EQ(g.outbox.sent.size(), 1u);
  EXPECT_EQ(g.outbox.sent[0].type, wire::MsgType::kHello);
  EXPECT_EQ(g.outbox.sent[0].request_id, 9u);
  EXPECT_EQ(g.Hello(2, wire::Role::kWorker, 2).message(),
            "rank 2 is already connected from 10.0.0.1:5");
  EXPECT_EQ(g.Hello(1, wire::Role::kWorker, 1).message(), "second hello");
}

TEST(HandshakeTest, ARegisterWhoseKeysDifferIsRefused) {
  Gate g;
  g.handshake.Accept(1, "a", Time{});
  Peer& peer = g.handshake.Admit(*g.peers.Find(1), wire::Role::kWorker, 1, 1);
  std::string meta;
  wire::EncodeMeta(wire::Register{{KeySpecOf("w", torch::zeros({4}))}}, &meta);
  EXPECT_EQ(g.handshake.ReadRegister(peer, meta, g.members).status().code(),
            StatusCode::kIncompatible);
  wire::EncodeMeta(wire::Register{{KeySpecOf("w", g.params[0])}}, &meta);
  auto ok = g.handshake.ReadRegister(peer, meta, g.members);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, AsWorker(peer));
}

}  // namespace
}  // namespace pstrain::ps
