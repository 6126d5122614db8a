#include "ps/engine/engine.h"

#include <nlohmann/json.hpp>

#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

// Before its hello a peer is unknown; it may not make us allocate much.
constexpr uint64_t kMaxFrameBeforeHello = 64 * 1024;

}  // namespace

Engine::Engine(const JobSpec& spec, std::vector<wire::KeySpec> fingerprint,
               ParameterServer* server, Outbox* outbox, EngineOptions options)
    : spec_(spec),
      server_(server),
      outbox_(outbox),
      options_(std::move(options)),
      formats_(spec, std::move(fingerprint), *server),
      rule_(MakeUpdateRule(spec, server)),
      ssp_(spec.num_workers(), spec.staleness),
      members_(spec.num_servers, spec.num_workers(), rule_.get(), &ssp_,
               &fence_),
      watch_(options_.timeout, spec.dead_after),
      reader_(server, rule_.get(), &formats_) {
  // See OnNewVersion. A standby copies whole versions, so with --replicas
  // no key may leave before its version is whole and copied.
  rule_->set_step_by_key(spec.replicas <= 1);
  key_steps_.gate.SetMarks(static_cast<uint32_t>(server_->num_keys()));
  key_steps_.gate.OpenTo(net::SendGate::kAll);
}

Engine::~Engine() = default;

void Engine::Start(Time now) {
  now_ = now;
  watch_.Start(now);
}

void Engine::OnAccept(PeerId id, std::string remote, Time now) {
  peers_.Add(id, std::move(remote), options_.auth_token, now);
}

// Before a peer has proven the token and said hello, only small frames of
// the expected type are read at all.
Status Engine::OnHeader(PeerId id, const wire::FrameHeader& header) {
  Peer* peer = peers_.Find(id);
  if (!peer)
    return Unavailable("unknown connection");
  if (!peer->auth.open())
    return peer->auth.CheckFrame(header.type, header.body_len, 0);
  if (peer->stage != Peer::Stage::kNew)
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

Status Engine::OnMeta(PeerId id, const wire::FrameHeader& header,
                      std::string_view meta, uint64_t data_bytes,
                      ReadPlan* plan) {
  Peer* peer = peers_.Find(id);
  if (!peer)
    return Unavailable("unknown connection");
  if (!peer->auth.open())
    return peer->auth.CheckFrame(header.type, header.body_len, data_bytes);
  // The frame parser (wire/frame_parser.h) has checked the meta and that the
  // data section is what its descriptors say; what is left is ours.
  switch (header.type) {
    case wire::MsgType::kShard:
      return PlanShard(*peer, meta, plan);
    case wire::MsgType::kPushBatch:
      return PlanBatch(*peer, meta, plan);
    case wire::MsgType::kPush:
    case wire::MsgType::kPushPull: {
      Status s = PlanPush(*peer, header, meta, plan);
      if (!s.ok() && peer->rank >= 0) {
        // Nothing of it is applied; the connection closes on the error.
        outbox_->Info("refused " + std::string(wire::MsgTypeName(header.type)) +
                      " from rank " + std::to_string(peer->rank) + ": " +
                      s.message());
      }
      return s;
    }
    default:
      return Status::Ok();
  }
}

void Engine::OnFrame(PeerId id, const wire::FrameHeader& header,
                     std::string_view meta, Time now) {
  now_ = now;
  Peer* peer = peers_.Find(id);
  if (!peer)
    return;
  peer->last_heard = now;
  Status s = HandleFrame(*peer, header, meta);
  if (s.ok())
    return;
  outbox_->Info(
      "refused " + std::string(wire::MsgTypeName(header.type)) + " from " +
      (peer->rank >= 0 ? "rank " + std::to_string(peer->rank) : peer->remote) +
      ": " + s.message());
  Refuse(*peer, header.request_id, s);
}

// Which message each stage admits: share/doc/conversation.md.
Status Engine::HandleFrame(Peer& peer, const wire::FrameHeader& header,
                           std::string_view meta) {
  if (!peer.auth.open())
    return OnAuth(peer, header, meta);
  if (peer.stage == Peer::Stage::kNew && header.type != wire::MsgType::kHello) {
    return InvalidArgument("hello expected");
  }
  const uint64_t id = header.request_id;
  switch (header.type) {
    case wire::MsgType::kHello:
      return OnHello(peer, id, meta);
    case wire::MsgType::kGetJob:
      return OnGetJob(peer, id);
    case wire::MsgType::kGetModule:
      return OnGetModule(peer, id);
    case wire::MsgType::kServerInfo:
      return OnServerInfo(peer, id, meta);
    case wire::MsgType::kShard:
      return OnShard(peer, id);
    case wire::MsgType::kHeartbeat:
      return OnHeartbeat(peer, meta);  // OnFrame noted the time
    case wire::MsgType::kRegister:
      return OnRegister(peer, id, meta);
    case wire::MsgType::kPull:
      return OnPull(peer, id, meta);
    case wire::MsgType::kPush:
    case wire::MsgType::kPushPull:
    case wire::MsgType::kPushBatch:
      return OnPushed(peer, header.type, id);
    case wire::MsgType::kDone:
      return OnDone(peer, id, meta);
    case wire::MsgType::kSnapshot:
      return OnSnapshot(peer, id, meta);
    default:
      break;
  }
  return InvalidArgument(std::string("unexpected ") +
                         wire::MsgTypeName(header.type));
}

// A push's bytes went where PlanPush or PlanBatch put them, which only a
// registered worker's get.
Status Engine::OnPushed(Peer& peer, wire::MsgType type, uint64_t id) {
  WorkerPeer* worker = Registered(peer);
  if (!worker)
    return InvalidArgument(std::string(wire::MsgTypeName(type)) +
                           " before register");
  return type == wire::MsgType::kPushBatch ? OnPushBatch(*worker, id)
                                           : OnPush(*worker, id);
}

Status Engine::OnAuth(Peer& peer, const wire::FrameHeader& header,
                      std::string_view meta) {
  wire::MsgType reply = wire::MsgType::kAck;
  PS_RETURN_IF_ERROR(peer.auth.OnFrame(header.type, meta, &reply, &peer.meta));
  Reply(peer, reply, header.request_id);
  return Status::Ok();
}

Status Engine::OnHello(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kNew || claims_.Claiming(peer.id))
    return InvalidArgument("second hello");
  wire::Hello hello;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &hello));
  PS_RETURN_IF_ERROR(CheckRank(hello));
  const int rank = static_cast<int>(hello.rank);
  if (hello.role == wire::Role::kServer && roster_.shard_in(rank)) {
    // A standby that lost its primary at the end of the run.
    return InvalidArgument("rank " + std::to_string(rank) +
                           "'s final shard is in: the run is ending");
  }
  for (const auto& [other_id, other] : peers_) {
    if (hello.role == wire::Role::kTool)
      break;  // rank 0's observer, again
    if (other.get() != &peer && other->rank == rank && !other->closing &&
        other->role != Peer::Role::kTool) {
      return InvalidArgument("rank " + std::to_string(rank) +
                             " is already connected from " + other->remote);
    }
  }
  if (hello.claim != wire::Claim::kNone)
    return OnClaim(peer, id, hello);
  if (hello.role == wire::Role::kServer && roster_.lost(rank)) {
    // Its state is the seed's or a checkpoint's, older than the shard's.
    return InvalidArgument("rank " + std::to_string(rank) +
                           "'s shard is lost and waits for its standby; a "
                           "server started again rejoins with --rejoin");
  }
  Admit(peer, hello.role, rank, rank, id);
  return Status::Ok();
}

void Engine::Admit(Peer& peer, wire::Role role, int rank, int process,
                   uint64_t id) {
  peer.rank = rank;
  peer.stage = Peer::Stage::kHello;
  Peer* typed = nullptr;
  if (role == wire::Role::kServer) {
    peer.role = Peer::Role::kServer;
    ServerPeer& server = peers_.Become<ServerPeer>(peer);
    roster_.Hello(rank, &server);
    if (process != rank)
      roster_.Claimed(rank, process, now_);
    typed = &server;
    watch_.Progress(now_);
  } else if (role == wire::Role::kTool) {
    peer.role = Peer::Role::kTool;
    typed = &peers_.Become<ToolPeer>(peer);
  } else {
    peer.role = Peer::Role::kWorker;
    typed = &peers_.Become<WorkerPeer>(peer, rank - spec_.num_servers);
  }
  wire::Hello reply{wire::Role::kServer, 0,
                    static_cast<uint32_t>(spec_.world_size)};
  wire::EncodeMeta(reply, &typed->meta);
  Reply(*typed, wire::MsgType::kHello, id);
}

// Workers may join any server; other servers only rank 0 (ExpectServers);
// a tool only as rank 0 (the master's observer, which asks for snapshots).
Status Engine::CheckRank(const wire::Hello& hello) const {
  const bool server = hello.role == wire::Role::kServer && roster_.expecting();
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

Status Engine::OnRegister(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kHello)
    return InvalidArgument("second register");
  if (!AsWorker(peer))
    return InvalidArgument("register from a server");
  return OnRegister(*AsWorker(peer), id, meta);
}

Status Engine::OnRegister(WorkerPeer& peer, uint64_t id,
                          std::string_view meta) {
  wire::Register reg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &reg));
  PS_RETURN_IF_ERROR(CompareFingerprints(formats_.fingerprint, reg.keys));
  PS_RETURN_IF_ERROR(members_.CheckRegister(peer.worker));
  if (members_.lost(peer.worker))
    PS_RETURN_IF_ERROR(Rejoin(peer));
  peer.stage = Peer::Stage::kRegistered;
  members_.Register(peer.worker, &peer, now_);
  watch_.Progress(now_);
  outbox_->Info("rank " + std::to_string(peer.rank) + " joined from " +
                peer.remote);
  peer.meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer.meta);
  Reply(peer, wire::MsgType::kAck, id);
  return Status::Ok();
}

Status Engine::OnDone(Peer& from, uint64_t id, std::string_view meta) {
  WorkerPeer* worker = Registered(from);
  if (!worker)
    return InvalidArgument("done before register");
  WorkerPeer& peer = *worker;
  wire::Done done;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &done));
  const auto json = nlohmann::json::parse(done.json, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return Corruption("done: stats are not a JSON object");
  }
  PS_ASSIGN_OR_RETURN(report::WorkerStats stats,
                      report::WorkerStatsFromJson(json));
  peer.stage = Peer::Stage::kDone;
  members_.Finish(peer.worker, std::move(stats), peer.waiting_seconds, now_);
  LeaveQuorum(peer.worker);
  ReleaseReplies();  // a finished worker no longer holds the others back
  watch_.Progress(now_);
  peer.meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer.meta);
  Reply(peer, wire::MsgType::kAck, id);
  MaybeFinish();
  return Status::Ok();
}

void Engine::Reply(Peer& peer, wire::MsgType type, uint64_t id) {
  if (peer.closing)
    return;
  out_.type = type;
  out_.request_id = id;
  out_.meta = peer.meta;
  out_.data.clear();
  out_.gate = nullptr;
  out_.tagged = false;
  out_.send_window = 0;
  out_.after_pushes_below = 0;
  outbox_->Send(peer.id, out_);
}

void Engine::Refuse(Peer& peer, uint64_t id, const Status& why) {
  if (peer.closing)
    return;
  peer.closing = true;
  outbox_->SendErrorAndClose(peer.id, id, why);
}

void Engine::Fail(const Status& status) {
  if (stopping_)
    return;
  failure_ = status;
  std::vector<Peer*> told;
  for (auto& [id, peer] : peers_) {
    if (peer->stage != Peer::Stage::kNew)
      told.push_back(peer.get());
  }
  for (Peer* p : told) {
    const WorkerPeer* worker = AsWorker(*p);
    Refuse(*p, worker && worker->held.waiting ? worker->held.id : 0, status);
  }
  Shutdown();
}

void Engine::Shutdown() {
  stopping_ = true;
  AbandonSnapshots();
  // An observer's connection waits for nothing more: it must not hold the
  // end of the run for the grace period.
  std::vector<PeerId> tools;
  for (auto& [id, peer] : peers_) {
    if (AsTool(*peer) && !peer->closing)
      tools.push_back(id);
  }
  for (PeerId id : tools) {
    if (Peer* p = peers_.Find(id))
      p->closing = true;
    outbox_->Close(id, Status::Ok());
  }
  outbox_->Shutdown();
}

double Engine::Seconds(Time from) const {
  return std::chrono::duration<double>(now_ - from).count();
}

}  // namespace pstrain::ps
