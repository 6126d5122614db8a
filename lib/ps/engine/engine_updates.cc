// The update path of the Engine: pushes (checked, planned, handed to the
// update rule), pulls waiting for a version, and parameters sent straight
// from their storage once no step can change them under the write.

#include <algorithm>
#include <utility>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {

// A push's descriptors are checked and its bytes planned before any is read.
Status Engine::PlanPush(Peer& from, const wire::FrameHeader& header,
                        std::string_view meta, ReadPlan* plan) {
  const wire::MsgType type = header.type;
  const bool push_pull = type == wire::MsgType::kPushPull;
  const char* what = wire::MsgTypeName(type);
  WorkerPeer* worker = Registered(from);
  if (!worker)
    return InvalidArgument(std::string(what) + " before register");
  WorkerPeer& peer = *worker;
  if (batches_.on()) {
    return InvalidArgument(std::string(what) +
                           ": the model trains on the server (--placement "
                           "server): send push_batch");
  }
  rule_->StepAllKeys();  // its pieces go into the accumulators
  peer.push_is_push_pull = push_pull;
  if (push_pull) {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push));
  } else {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push_only));
  }
  const auto& grads = push_pull ? peer.push.grads : peer.push_only.grads;
  const auto& rows = push_pull ? peer.push.rows : peer.push_only.rows;
  if (grads.size() + rows.size() != static_cast<size_t>(server_->num_keys())) {
    return Corruption(std::string(what) + " carries " +
                      std::to_string(grads.size() + rows.size()) +
                      " tensors, expected " +
                      std::to_string(server_->num_keys()));
  }
  static const std::vector<wire::RowRequest> kNone;
  PS_RETURN_IF_ERROR(
      reader_.Check(grads, rows, push_pull ? peer.push.requests : kNone, what));
  peer.duplicate = spec_.replicas > 1 && IsDuplicate(peer);
  if (!peer.duplicate) {
    PS_RETURN_IF_ERROR(members_.CheckMember(peer.worker));
    PS_RETURN_IF_ERROR(rule_->CheckPush(peer.worker, peer.pushed_version()));
  }
  reader_.Plan(peer, grads, rows, plan);
  outbox_->Trace({nullptr, peer.rank});  // its first key is being read
  plan->piece_by_piece = true;
  peer.push_id = header.request_id;
  peer.reading_push = push_pull;
  peer.replied_ahead = false;
  if (push_pull && rule_->steps_ahead() && rule_->version_whole() &&
      !key_steps_.ahead) {
    // The first push of a step sets its order.
    formats_.order.clear();
    for (const auto& d : grads)
      formats_.order.push_back(static_cast<int>(d.key));
    rule_->set_step_order(formats_.order);
  }
  return Status::Ok();
}

// --replicas: a push whose effect this server has already, which a worker
// sends again to the standby that took its server's shard over. Sync: a
// push for a version made already; async, ssp: one naming a version no
// newer than the last push applied from this worker (a worker's pushes
// name growing versions).
bool Engine::IsDuplicate(const WorkerPeer& peer) const {
  const uint64_t version = peer.pushed_version();
  if (!rule_->traits().applies_each_push)
    return version < server_->version();
  const int64_t last = rule_->applied()[peer.worker];
  return last >= 0 && static_cast<int64_t>(version) <= last;
}

void Engine::OnPiece(PeerId id, size_t index, Time now) {
  now_ = now;
  WorkerPeer* peer = peers_.FindWorker(id);
  if (!peer || peer->refused_key >= 0 || peer->duplicate)
    return;  // the rest of a refused push is dropped, and all of a duplicate
  const int key = reader_.Read(*peer, index);
  if (key >= 0)
    PieceAdded(*peer, index, key);
}

bool Engine::OnPieceAt(PeerId id, size_t index, const uint8_t* data, Time now) {
  now_ = now;
  WorkerPeer* peer = peers_.FindWorker(id);
  if (!peer || peer->refused_key >= 0 || peer->duplicate)
    return true;  // dropped, as OnPiece drops it
  if (!reader_.ReadsAt(*peer, index))
    return false;
  const int key =
      reader_.ReadAt(*peer, index, reinterpret_cast<const char*>(data));
  if (key >= 0)
    PieceAdded(*peer, index, key);
  return true;
}

void Engine::PieceAdded(const WorkerPeer& peer, size_t index, int key) {
  const WorkerPeer::Piece& piece = peer.pieces[index];
  const uint64_t nbytes = server_->params()[key].nbytes();
  if (outbox_->tracing() && piece.record_bytes == 0 &&
      piece.offset + piece.bytes == nbytes) {
    outbox_->Trace({"push", peer.rank, key,
                    static_cast<int64_t>(peer.pushed_version()), nbytes});
  }
  StepAhead(key);
}

Status Engine::OnPull(Peer& from, uint64_t id, std::string_view meta) {
  WorkerPeer* worker = Registered(from);
  if (!worker)
    return InvalidArgument("pull before register");
  WorkerPeer& peer = *worker;
  if (batches_.on()) {
    return InvalidArgument(
        "pull: the model trains on the server (--placement server)");
  }
  wire::Pull pull;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &pull));
  peer.rows_out.want.clear();  // a pull returns whole tensors
  const uint64_t min_version =
      std::max(pull.min_version, peer.first_pull_min_version);
  peer.first_pull_min_version = 0;
  return AwaitVersion(peer, id, min_version, false);
}

// A reply of parameters once the server's version reaches `min_version`
// and, with `ssp`, once the worker is within the staleness bound.
Status Engine::AwaitVersion(WorkerPeer& peer, uint64_t id, uint64_t min_version,
                            bool ssp) {
  if (peer.held.waiting)
    return InvalidArgument("a pull is already pending");
  if (key_steps_.ahead && !stop_training_) {
    // Some keys hold the next version already: answer with it, each key
    // as it is stepped.
    if (!ssp && min_version <= server_->version() + 1) {
      SendParams(peer, id, true);
      return Status::Ok();
    }
    min_version = std::max(min_version, server_->version() + 1);
  }
  if (stop_training_ || (server_->version() >= min_version && Replicated() &&
                         (!ssp || ssp_.Allows(peer.worker)))) {
    SendParams(peer, id);
    return Status::Ok();
  }
  peer.held.waiting = true;
  peer.held.id = id;
  peer.held.min_version = min_version;
  peer.held.ssp = ssp;
  peer.held.since = now_;
  return Status::Ok();
}

Status Engine::OnPush(WorkerPeer& peer, uint64_t id) {
  peer.reading_push = false;
  if (std::exchange(peer.duplicate, false)) {
    outbox_->Info("rank " + std::to_string(peer.rank) +
                  " sent its push for version " +
                  std::to_string(peer.pushed_version()) +
                  " again; it is applied already: dropped");
    AnswerPush(peer, id);
    return Status::Ok();
  }
  ssp_.NotePush(peer.worker);
  if (fence_.Holds({WriteFence::Work::Kind::kPush, -1, 0, peer.id, id}))
    return Status::Ok();
  auto stepped = Step(peer, peer.pushed_version());
  if (!stepped.ok())
    return stepped.status();
  if (*stepped)
    OnNewVersion();
  AnswerPush(peer, id);
  return Status::Ok();
}

Result<bool> Engine::Step(WorkerPeer& peer, uint64_t version) {
  if (stop_training_)
    return false;  // the model is final: the push is answered only
  PS_RETURN_IF_ERROR(members_.CheckMember(peer.worker));
  if (!rule_->has_quorum())
    watch_.Progress(now_);  // a refused push is progress too
  const bool refused = peer.refused_key >= 0;
  if (refused)
    RefusePush(peer, version);
  outbox_->Trace({});  // the rule's work starts
  auto stepped = rule_->Push(peer.worker, version, refused);
  if (stepped.ok() && *stepped) {
    outbox_->Trace({"step", TraceMark::kEngine, -1,
                    static_cast<int64_t>(server_->version())});
  }
  if (stepped.ok() && !*stepped)
    ArmStepTimeout();
  return stepped;
}

// --step_timeout: the workers not in this long after a step's first push
// are stragglers for that step; it closes with the pushes it has.
void Engine::ArmStepTimeout() {
  const std::optional<Time> wake =
      deadline_.Arm(server_->version(), rule_->pushes_this_step(),
                    rule_->step_timeout(), now_);
  if (wake)
    outbox_->WakeAt(*wake);
}

void Engine::OnTimer(Time now) {
  now_ = now;
  const std::optional<uint64_t> due = deadline_.Due(server_->version(), now);
  if (stopping_ || !due)
    return;
  CloseTimedOutStep(*due);
}

void Engine::CloseTimedOutStep(uint64_t version) {
  if (stopping_ || server_->version() != version)
    return;
  if (fence_.Holds({WriteFence::Work::Kind::kCloseStep, -1, version, 0, 0}))
    return;
  deadline_.CountTimedOut();
  if (rule_->CloseStep())
    OnNewVersion();
}

void Engine::RefusePush(const WorkerPeer& peer, uint64_t version) {
  const int key = peer.refused_key;
  const std::string name = formats_.Name(key);
  outbox_->Info("refused the push of rank " + std::to_string(peer.rank) +
                " for version " + std::to_string(version) + ": key " +
                std::to_string(key) + " (" + name + ") " +
                (peer.refused_why.empty() ? std::string("holds NaN or Inf")
                                          : peer.refused_why) +
                "; " + rule_->traits().refused_push_outcome);
}

// Sync: the parameters this push helps to make; async: the current ones;
// ssp: the current ones once this worker is within the staleness bound.
void Engine::AnswerPush(WorkerPeer& peer, uint64_t id) {
  if (!peer.push_is_push_pull) {
    peer.meta.clear();
    Reply(peer, wire::MsgType::kAck, id);
    return;
  }
  if (peer.replied_ahead) {
    peer.replied_ahead = false;
    return;
  }
  peer.rows_out.want = peer.push.requests;
  Status s = AwaitVersion(peer, id, rule_->ReplyVersion(peer.push.version),
                          rule_->bounds_staleness());
  if (!s.ok())
    Refuse(peer, id, s);
}

void Engine::ReleaseReplies() {
  for (int w = 0; w < members_.num_workers(); ++w) {
    WorkerPeer* p = members_.peer(w);
    if (!p || !p->held.waiting)
      continue;
    if (!stop_training_) {
      if (server_->version() < p->held.min_version || !Replicated())
        continue;
      if (p->held.ssp && !ssp_.Allows(p->worker))
        continue;
    }
    p->held.waiting = false;
    p->held.ssp = false;
    p->waiting_seconds += Seconds(p->held.since);
    SendParams(*p, p->held.id);
  }
}

}  // namespace pstrain::ps
