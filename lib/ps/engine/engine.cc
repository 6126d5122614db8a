// The Engine's inputs: each is routed to the part that owns its rule, and
// what one part's answer means for the others is sequenced in
// engine_sequence.cc.

#include "ps/engine/engine.h"

#include "ps/engine/batch_desk.h"
#include "ps/engine/handshake.h"
#include "ps/engine/key_formats.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/reply_desk.h"
#include "ps/engine/snapshot_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"

namespace pstrain::ps {

static_assert(Engine::kTick == PeerWatch::kTick);

Engine::Engine(const JobSpec& spec, std::vector<wire::KeySpec> fingerprint,
               ParameterServer* server, Outbox* outbox, EngineOptions options)
    : spec_(spec),
      server_(server),
      outbox_(outbox),
      formats_(
          std::make_unique<KeyFormats>(spec_, std::move(fingerprint), *server)),
      peers_(std::make_unique<PeerTable>()),
      members_(
          std::make_unique<Membership>(spec_.num_servers, spec_.num_workers())),
      watch_(std::make_unique<PeerWatch>(options.timeout, spec_.dead_after)),
      steps_(std::make_unique<StepDriver>(
          spec_, server, formats_.get(), members_.get(), watch_.get(), outbox)),
      replies_(std::make_unique<ReplyDesk>(
          spec_, server, formats_.get(), members_.get(), steps_.get(), outbox)),
      snapshots_(std::make_unique<SnapshotDesk>(server, steps_.get(),
                                                peers_.get(), outbox)),
      master_(std::make_unique<MasterDesk>(spec_, options.timeout, peers_.get(),
                                           outbox)),
      handshake_(std::make_unique<Handshake>(
          spec_, std::move(options.auth_token), formats_.get(), peers_.get(),
          watch_.get(), outbox)),
      batches_(std::make_unique<BatchDesk>()) {}

Engine::~Engine() = default;

void Engine::Start(Time now) {
  run_.now = now;
  watch_->Start(now);
}

void Engine::OnAccept(PeerId id, std::string remote, Time now) {
  handshake_->Accept(id, std::move(remote), now);
}

Status Engine::OnHeader(PeerId id, const wire::FrameHeader& header) {
  Peer* peer = peers_->Find(id);
  if (!peer)
    return Unavailable("unknown connection");
  return handshake_->CheckHeader(*peer, header);
}

Status Engine::OnMeta(PeerId id, const wire::FrameHeader& header,
                      std::string_view meta, uint64_t data_bytes,
                      ReadPlan* plan) {
  Peer* peer = peers_->Find(id);
  if (!peer)
    return Unavailable("unknown connection");
  if (!peer->auth.open())
    return peer->auth.CheckFrame(header.type, header.body_len, data_bytes);
  // The frame parser (wire/frame_parser.h) has checked the meta and that the
  // data section is what its descriptors say; what is left is ours.
  const char* what = wire::MsgTypeName(header.type);
  WorkerPeer* worker = Registered(*peer);
  switch (header.type) {
    case wire::MsgType::kShard:
      return master_->PlanShard(*peer, meta, plan);
    case wire::MsgType::kPushBatch: {
      PS_ASSIGN_OR_RETURN(WorkerPeer * batch,
                          batches_->Accept(*peer, meta, *outbox_));
      PS_RETURN_IF_ERROR(steps_->CheckBatch(batch->worker));
      BatchDesk::Plan(*batch, plan);
      return Status::Ok();
    }
    case wire::MsgType::kPush:
    case wire::MsgType::kPushPull: {
      if (!worker)
        return InvalidArgument(std::string(what) + " before register");
      if (batches_->on()) {
        return InvalidArgument(std::string(what) +
                               ": the model trains on the server (--placement "
                               "server): send push_batch");
      }
      Status s = steps_->PlanPush(*worker, header.type, meta, plan);
      if (!s.ok()) {
        // Nothing of it is applied; the connection closes on the error.
        outbox_->Info("refused " + std::string(what) + " from rank " +
                      std::to_string(peer->rank) + ": " + s.message());
      }
      return s;
    }
    default:
      return Status::Ok();
  }
}

void Engine::OnPiece(PeerId id, size_t index, Time now) {
  run_.now = now;
  WorkerPeer* peer = peers_->FindWorker(id);
  if (!peer)
    return;
  const int key = steps_->ReadPiece(*peer, index);
  if (key >= 0)
    KeyIn(key);
}

bool Engine::OnPieceAt(PeerId id, size_t index, const uint8_t* data, Time now) {
  run_.now = now;
  WorkerPeer* peer = peers_->FindWorker(id);
  if (!peer || steps_->Drops(*peer))
    return true;  // dropped, as OnPiece drops it
  if (!steps_->ReadsAt(*peer, index))
    return false;
  const int key = steps_->ReadPieceAt(*peer, index, data);
  if (key >= 0)
    KeyIn(key);
  return true;
}

void Engine::OnFrame(PeerId id, const wire::FrameHeader& header,
                     std::string_view meta, Time now) {
  run_.now = now;
  Peer* peer = peers_->Find(id);
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
  Refuse(*outbox_, *peer, header.request_id, s);
}

// Which message each stage admits: share/doc/conversation.md. Each goes to
// the part that handles it (design.md, "The Engine's parts").
Status Engine::HandleFrame(Peer& peer, const wire::FrameHeader& header,
                           std::string_view meta) {
  if (!peer.auth.open())
    return handshake_->OnAuth(peer, header, meta);
  if (peer.stage == Peer::Stage::kNew && header.type != wire::MsgType::kHello)
    return InvalidArgument("hello expected");
  const uint64_t id = header.request_id;
  switch (header.type) {
    case wire::MsgType::kHello:
      return OnHello(peer, id, meta);
    case wire::MsgType::kGetJob:
      return master_->OnGetJob(peer, id);
    case wire::MsgType::kGetModule:
      return master_->OnGetModule(peer, id);
    case wire::MsgType::kServerInfo:
      PS_RETURN_IF_ERROR(master_->OnServerInfo(peer, id, meta, run_.now));
      watch_->Progress(run_.now);
      return Status::Ok();
    case wire::MsgType::kShard:
      PS_RETURN_IF_ERROR(master_->OnShard(peer, id));
      watch_->Progress(run_.now);
      if (master_->RunOver(*members_))
        Shutdown();
      return Status::Ok();
    case wire::MsgType::kHeartbeat:
      return handshake_->OnHeartbeat(peer, meta);  // OnFrame noted the time
    case wire::MsgType::kRegister:
      return OnRegister(peer, id, meta);
    case wire::MsgType::kPull:
    case wire::MsgType::kPush:
    case wire::MsgType::kPushPull:
    case wire::MsgType::kPushBatch:
      return OnWorkerRequest(peer, header, meta);
    case wire::MsgType::kDone:
      return OnDone(peer, id, meta);
    case wire::MsgType::kSnapshot: {
      PS_ASSIGN_OR_RETURN(wire::Snapshot msg,
                          snapshots_->Ask(peer, meta, run_.stopping));
      if (msg.standby && !run_.stopping)
        ReleaseReplies();  // those that waited for this version's copy
      snapshots_->Serve(peer, id, msg, run_.stopping, run_.now);
      return Status::Ok();
    }
    default:
      return InvalidArgument(std::string("unexpected ") +
                             wire::MsgTypeName(header.type));
  }
}

Status Engine::OnHello(Peer& peer, uint64_t id, std::string_view meta) {
  PS_ASSIGN_OR_RETURN(wire::Hello hello,
                      handshake_->ReadHello(peer, meta, master_->roster(),
                                            master_->claiming(peer.id)));
  const int rank = static_cast<int>(hello.rank);
  if (hello.claim == wire::Claim::kNone) {
    Admit(peer.id, hello.role, rank, rank, id);
    return Status::Ok();
  }
  Status s = master_->OnClaim(peer, id, hello, run_.stopping);
  for (const MasterDesk::Admission& a : master_->TakeAdmissions())
    Admit(a.peer, wire::Role::kServer, a.rank, a.process, a.request_id);
  return s;
}

void Engine::Admit(PeerId id, wire::Role role, int rank, int process,
                   uint64_t request_id) {
  Peer* peer = peers_->Find(id);
  if (!peer)
    return;
  Peer& typed = handshake_->Admit(*peer, role, rank, request_id);
  if (ServerPeer* server = AsServer(typed)) {
    master_->Hello(*server, process, run_.now);
    watch_->Progress(run_.now);
  }
}

void Engine::OnWritten(PeerId id, wire::MsgType type, Time now) {
  if (type != wire::MsgType::kParams)
    return;
  run_.now = now;
  if (steps_->Written(id))
    RunFenced();
}

void Engine::OnTimer(Time now) {
  run_.now = now;
  const std::optional<uint64_t> due = steps_->TimedOut(now);
  if (!run_.stopping && due &&
      steps_->CloseTimedOut(*due) == StepDriver::Outcome::kClosed)
    OnStepClosed();
}

void Engine::Continue(Time now) {
  run_.now = now;
  if (steps_->TakePosted() && steps_->UpdateNextKey()) {
    snapshots_->Complete(run_.now);
    for (int k : steps_->rule().step_order().keys())
      KeyIn(k);  // keys of the next step that came in meanwhile
  }
  if (steps_->fence_open())
    RunFenced();
}

void Engine::RequestSnapshot(uint64_t min_version, bool with_optimizer_state,
                             SnapshotDone done, Time now, bool replay) {
  run_.now = now;
  snapshots_->Request(min_version, with_optimizer_state, std::move(done),
                      replay, run_.stopping, now);
}

void Engine::StopTraining(Time now) {
  run_.now = now;
  if (steps_->Stop())
    ReleaseReplies();
}

}  // namespace pstrain::ps
