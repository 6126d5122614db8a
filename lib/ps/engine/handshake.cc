#include "ps/engine/handshake.h"

#include "ps/engine/key_formats.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/server_roster.h"
#include "ps/job/job_spec.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {

namespace {

// Before its hello a peer is unknown; it may not make us allocate much.
constexpr uint64_t kMaxFrameBeforeHello = 64 * 1024;

std::string WholeSeconds(std::chrono::milliseconds d) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

Handshake::Handshake(const JobSpec& spec, std::string auth_token,
                     const KeyFormats* formats, PeerTable* peers,
                     const PeerWatch* watch, Outbox* outbox)
    : spec_(spec),
      auth_token_(std::move(auth_token)),
      formats_(formats),
      peers_(peers),
      watch_(watch),
      outbox_(outbox) {}

void Handshake::Accept(PeerId id, std::string remote, Time now) {
  peers_->Add(id, std::move(remote), auth_token_, now);
}

Status Handshake::CheckHeader(Peer& peer,
                              const wire::FrameHeader& header) const {
  if (!peer.auth.open())
    return peer.auth.CheckFrame(header.type, header.body_len, 0);
  if (peer.stage != Peer::Stage::kNew)
    return Status::Ok();
  if (header.type != wire::MsgType::kHello) {
    return Corruption(std::string("expected hello first, got ") +
                      wire::MsgTypeName(header.type));
  }
  if (header.body_len > kMaxFrameBeforeHello) {
    return Corruption("hello of " + std::to_string(header.body_len) +
                      " bytes, expected at most " +
                      std::to_string(kMaxFrameBeforeHello));
  }
  return Status::Ok();
}

Status Handshake::OnAuth(Peer& peer, const wire::FrameHeader& header,
                         std::string_view meta) {
  wire::MsgType reply = wire::MsgType::kAck;
  PS_RETURN_IF_ERROR(peer.auth.OnFrame(header.type, meta, &reply, &peer.meta));
  Reply(*outbox_, peer, reply, header.request_id);
  return Status::Ok();
}

Result<wire::Hello> Handshake::ReadHello(Peer& peer, std::string_view meta,
                                         const ServerRoster& roster,
                                         bool claiming) const {
  if (peer.stage != Peer::Stage::kNew || claiming)
    return InvalidArgument("second hello");
  wire::Hello hello;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &hello));
  PS_RETURN_IF_ERROR(CheckRank(hello, roster.expecting()));
  const int rank = static_cast<int>(hello.rank);
  const bool server = hello.role == wire::Role::kServer;
  if (server && roster.shard_in(rank)) {
    // A standby that lost its primary at the end of the run.
    return InvalidArgument("rank " + std::to_string(rank) +
                           "'s final shard is in: the run is ending");
  }
  for (const auto& [other_id, other] : *peers_) {
    if (hello.role == wire::Role::kTool)
      break;  // rank 0's observer, again
    if (other.get() != &peer && other->rank == rank && !other->closing &&
        other->role != Peer::Role::kTool) {
      return InvalidArgument("rank " + std::to_string(rank) +
                             " is already connected from " + other->remote);
    }
  }
  if (hello.claim == wire::Claim::kNone && server && roster.lost(rank)) {
    // Its state is the seed's or a checkpoint's, older than the shard's.
    return InvalidArgument("rank " + std::to_string(rank) +
                           "'s shard is lost and waits for its standby; a "
                           "server started again rejoins with --rejoin");
  }
  return hello;
}

Peer& Handshake::Admit(Peer& peer, wire::Role role, int rank, uint64_t id) {
  peer.rank = rank;
  peer.stage = Peer::Stage::kHello;
  Peer* typed = nullptr;
  if (role == wire::Role::kServer) {
    peer.role = Peer::Role::kServer;
    typed = &peers_->Become<ServerPeer>(peer);
  } else if (role == wire::Role::kTool) {
    peer.role = Peer::Role::kTool;
    typed = &peers_->Become<ToolPeer>(peer);
  } else {
    peer.role = Peer::Role::kWorker;
    typed = &peers_->Become<WorkerPeer>(peer, rank - spec_.num_servers);
  }
  wire::Hello reply{wire::Role::kServer, 0,
                    static_cast<uint32_t>(spec_.world_size)};
  wire::EncodeMeta(reply, &typed->meta);
  Reply(*outbox_, *typed, wire::MsgType::kHello, id);
  return *typed;
}

// Workers may join any server; other servers only rank 0 (`expecting`);
// a tool only as rank 0 (the master's observer, which asks for snapshots).
Status Handshake::CheckRank(const wire::Hello& hello, bool expecting) const {
  const bool server = hello.role == wire::Role::kServer && expecting;
  const bool tool = hello.role == wire::Role::kTool;
  if (hello.role != wire::Role::kWorker && !server && !tool) {
    return InvalidArgument(std::string("a ") + wire::RoleName(hello.role) +
                           " cannot join; expected a worker");
  }
  if (static_cast<int>(hello.world_size) != spec_.world_size) {
    return Incompatible(
        "--world_size mismatch: rank " + std::to_string(hello.rank) + " has " +
        std::to_string(hello.world_size) + ", the server (rank 0) has " +
        std::to_string(spec_.world_size));
  }
  const int rank = static_cast<int>(hello.rank);
  if (tool) {
    if (rank == 0)
      return Status::Ok();
    return InvalidArgument("a tool may join only as rank 0, not " +
                           std::to_string(rank));
  }
  const int first = server ? 1 : spec_.num_servers;
  const int end = server ? spec_.num_servers : spec_.world_size;
  if (rank < first || rank >= end) {
    return InvalidArgument(
        "--rank " + std::to_string(rank) + " is not a " +
        wire::RoleName(hello.role) + " rank of --world_size " +
        std::to_string(spec_.world_size) + " --num_servers " +
        std::to_string(spec_.num_servers) + " (expected " +
        std::to_string(first) + ".." + std::to_string(end - 1) + ")");
  }
  return Status::Ok();
}

Result<WorkerPeer*> Handshake::ReadRegister(Peer& peer, std::string_view meta,
                                            const Membership& members) const {
  if (peer.stage != Peer::Stage::kHello)
    return InvalidArgument("second register");
  WorkerPeer* worker = AsWorker(peer);
  if (!worker)
    return InvalidArgument("register from a server");
  wire::Register reg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &reg));
  PS_RETURN_IF_ERROR(CompareFingerprints(formats_->fingerprint, reg.keys));
  PS_RETURN_IF_ERROR(members.CheckRegister(worker->worker));
  return worker;
}

// OnFrame noted the time. Only a registered worker's progress counts.
Status Handshake::OnHeartbeat(Peer& peer, std::string_view meta) {
  if (ServerPeer* server = AsServer(peer))
    server->beats = true;  // watched from now on (MasterDesk::FenceSilent)
  WorkerPeer* worker = Registered(peer);
  return worker ? progress_.Heartbeat(worker->rank, meta) : Status::Ok();
}

// A peer that never finishes its handshake is dropped.
void Handshake::CloseLate(Time now) {
  std::vector<PeerId> late;
  watch_->LateHandshakes(*peers_, now, &late);
  for (PeerId id : late) {
    peers_->Find(id)->closing = true;
    outbox_->Close(id, Timeout("no handshake within " +
                               WholeSeconds(watch_->timeout()) + " s"));
  }
}

}  // namespace pstrain::ps
