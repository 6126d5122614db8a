#include "ps/engine.h"

#include <nlohmann/json.hpp>

#include "ps/engine_peer.h"
#include "ps/tensor_codec.h"
#include "util/check.h"

namespace pstrain::ps {

namespace {

// Before its hello a peer is unknown; it may not make us allocate much.
constexpr uint64_t kMaxFrameBeforeHello = 64 * 1024;

}  // namespace

Engine::Engine(const JobSpec& spec, std::vector<wire::KeySpec> fingerprint,
               ParameterServer* server, Outbox* outbox, EngineOptions options)
    : spec_(spec),
      fingerprint_(std::move(fingerprint)),
      server_(server),
      outbox_(outbox),
      options_(std::move(options)),
      rule_(MakeUpdateRule(spec, server)),
      ssp_(spec.num_workers(), spec.staleness),
      members_(spec.num_servers, spec.num_workers(), server, &ssp_, &fence_) {
  auto compression = CompressionOf(spec_);
  PS_CHECK(compression.ok()) << compression.status().ToString();
  compression_ = *compression;
  const auto& params = server_->params();
  std::vector<bool> row_sparse(params.size());
  for (int k = 0; k < server_->num_keys(); ++k)
    row_sparse[k] = server_->is_row_sparse(k);
  pull_.Init(compression_, params, row_sparse);
  for (int k = 0; k < server_->num_keys(); ++k) {
    push_codecs_.push_back(
        row_sparse[k]
            ? PushRowsCodecOf(compression_, params[k])
            : PushCodecOf(compression_, params[k].requires_grad(), params[k]));
    wire::TensorDesc d = DescribeTensor(k, params[k]);
    if (pull_.codec(k) != wire::Codec::kRaw) {
      d.codec = pull_.codec(k);
      d.nbytes = pull_.nbytes(k);
    }
    params_msg_.params.push_back(d);
  }
  server_->set_step_by_key(true);  // see OnNewVersion
  step_gate_.OpenTo(net::SendGate::kAll);
}

Engine::~Engine() = default;

void Engine::Start(Time now) {
  now_ = last_progress_ = last_tick_ = now;
}

Peer* Engine::Find(PeerId id) {
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : it->second.get();
}

void Engine::OnAccept(PeerId id, std::string remote, Time now) {
  auto peer = std::make_unique<Peer>();
  peer->id = id;
  peer->remote = std::move(remote);
  peer->auth = net::AuthGate(options_.auth_token);
  peer->accepted_at = peer->last_heard = now;
  peers_[id] = std::move(peer);
}

// Before a peer has proven the token and said hello, only small frames of
// the expected type are read at all.
Status Engine::OnHeader(PeerId id, const wire::FrameHeader& header) {
  Peer* peer = Find(id);
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
  Peer* peer = Find(id);
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
      Status s = PlanPush(*peer, header.type, meta, plan);
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
  Peer* peer = Find(id);
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
  switch (header.type) {
#define PSTRAIN_HANDLE(value, Enum, name, Struct, Data) \
  case wire::MsgType::Enum:                             \
    return Handle(peer, header, meta, Tag<wire::Struct>{});
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_HANDLE)
#undef PSTRAIN_HANDLE
  }
  return InvalidArgument(std::string("unexpected ") +
                         wire::MsgTypeName(header.type));
}

Status Engine::OnAuth(Peer& peer, const wire::FrameHeader& header,
                      std::string_view meta) {
  wire::MsgType reply = wire::MsgType::kAck;
  PS_RETURN_IF_ERROR(peer.auth.OnFrame(header.type, meta, &reply, &peer.meta));
  Reply(peer, reply, header.request_id);
  return Status::Ok();
}

Status Engine::OnHello(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kNew)
    return InvalidArgument("second hello");
  wire::Hello hello;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &hello));
  PS_RETURN_IF_ERROR(CheckRank(hello));
  const int rank = static_cast<int>(hello.rank);
  for (const auto& [other_id, other] : peers_) {
    if (hello.role == wire::Role::kTool)
      break;  // rank 0's observer, again
    if (other.get() != &peer && other->rank == rank && !other->closing &&
        !other->tool) {
      return InvalidArgument("rank " + std::to_string(rank) +
                             " is already connected from " + other->remote);
    }
  }
  peer.rank = rank;
  peer.stage = Peer::Stage::kHello;
  if (hello.role == wire::Role::kServer) {
    peer.server = rank;
    servers_[rank] = &peer;
    last_progress_ = now_;
  } else if (hello.role == wire::Role::kTool) {
    peer.tool = true;
  } else {
    peer.worker = rank - spec_.num_servers;
  }
  wire::Hello reply{wire::Role::kServer, 0,
                    static_cast<uint32_t>(spec_.world_size)};
  wire::EncodeMeta(reply, &peer.meta);
  Reply(peer, wire::MsgType::kHello, id);
  return Status::Ok();
}

// Workers may join any server; other servers only rank 0 (ExpectServers);
// a tool only as rank 0 (the master's observer, which asks for snapshots).
Status Engine::CheckRank(const wire::Hello& hello) const {
  const bool server = hello.role == wire::Role::kServer && plan_ != nullptr;
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
  if (peer.worker < 0)
    return InvalidArgument("register from a server");
  wire::Register reg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &reg));
  PS_RETURN_IF_ERROR(CompareFingerprints(fingerprint_, reg.keys));
  PS_RETURN_IF_ERROR(members_.CheckRegister(peer.worker));
  if (members_.lost(peer.worker))
    PS_RETURN_IF_ERROR(Rejoin(peer));
  peer.stage = Peer::Stage::kRegistered;
  members_.Register(peer.worker, &peer, now_);
  last_progress_ = now_;
  outbox_->Info("rank " + std::to_string(peer.rank) + " joined from " +
                peer.remote);
  peer.meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer.meta);
  Reply(peer, wire::MsgType::kAck, id);
  return Status::Ok();
}

Status Engine::OnDone(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kRegistered)
    return InvalidArgument("done before register");
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
  last_progress_ = now_;
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
  outbox_->Send(peer.id, out_);
}

void Engine::Refuse(Peer& peer, uint64_t id, const Status& why) {
  if (peer.closing)
    return;
  peer.closing = true;
  outbox_->SendErrorAndClose(peer.id, id, why);
}

void Engine::OnClose(PeerId id, const Status& why, Time now) {
  now_ = now;
  auto it = peers_.find(id);
  if (it == peers_.end())
    return;
  std::unique_ptr<Peer> owned = std::move(it->second);
  peers_.erase(it);
  Peer& peer = *owned;
  peer.closing = true;
  if (fence_.Closed(id))
    outbox_->Post();  // work waited for its writes
  if (peer.stage == Peer::Stage::kRegistered && !stopping_) {
    LoseWorker(peer, why);
  } else if (peer.server > 0 && !peer.shard_in && !stopping_) {
    Fail(Unavailable("rank " + std::to_string(peer.rank) +
                     " (server) disconnected before sending its parameters" +
                     (why.ok() ? "" : " (" + why.message() + ")")));
  } else if (!why.ok() && !stopping_) {
    outbox_->Info("dropped connection from " + peer.remote + ": " +
                  why.ToString());
  }
  if (peer.worker >= 0)
    members_.Disconnect(peer.worker, &peer);
  if (peer.server > 0 && servers_[peer.server] == &peer)
    servers_[peer.server] = nullptr;
  // A caller up the stack may still hold it.
  retired_.push_back(std::move(owned));
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
  for (Peer* p : told)
    Refuse(*p, p->reply_pending ? p->pending_id : 0, status);
  Shutdown();
}

void Engine::Shutdown() {
  stopping_ = true;
  AbandonSnapshots();
  // An observer's connection waits for nothing more: it must not hold the
  // end of the run for the grace period.
  std::vector<PeerId> tools;
  for (auto& [id, peer] : peers_) {
    if (peer->tool && !peer->closing)
      tools.push_back(id);
  }
  for (PeerId id : tools) {
    if (Peer* p = Find(id))
      p->closing = true;
    outbox_->Close(id, Status::Ok());
  }
  outbox_->Shutdown();
}

double Engine::Seconds(Time from) const {
  return std::chrono::duration<double>(now_ - from).count();
}

}  // namespace pstrain::ps
