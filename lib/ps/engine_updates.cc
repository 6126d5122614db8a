// The update path of the Engine: pushes (checked, planned, handed to the
// update rule), pulls waiting for a version, and parameters sent straight
// from their storage once no step can change them under the write.

#include <algorithm>

#include "ps/engine.h"
#include "ps/engine_peer.h"
#include "ps/finite_check.h"
#include "ps/tensor_codec.h"

namespace pstrain::ps {

// A push's descriptors are checked and its bytes planned before any is read.
Status Engine::PlanPush(Peer& peer, wire::MsgType type, std::string_view meta,
                        ReadPlan* plan) {
  const bool push_pull = type == wire::MsgType::kPushPull;
  const char* what = wire::MsgTypeName(type);
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument(std::string(what) + " before register");
  }
  if (batches_) {
    return InvalidArgument(std::string(what) +
                           ": the model trains on the server (--placement "
                           "server): send push_batch");
  }
  server_->StepAllKeys();  // its pieces go into the accumulators
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
  PS_RETURN_IF_ERROR(CheckPushKeys(grads, what));
  static const std::vector<wire::RowRequest> kNone;
  PS_RETURN_IF_ERROR(
      CheckRows(rows, push_pull ? peer.push.requests : kNone, what));
  PS_RETURN_IF_ERROR(server_->CheckPush(peer.worker, peer.pushed_version()));
  peer.refused_key = -1;
  peer.refused_why.clear();
  PlanPieces(peer, grads, plan);
  PlanRows(peer, rows, plan);
  plan->piece_by_piece = true;
  return Status::Ok();
}

// A push names every key once, in any order: a worker sends its gradients
// in the order backward computes them (net/send_gate.h).
Status Engine::CheckPushKeys(const std::vector<wire::TensorDesc>& grads,
                             const char* what) {
  const auto& params = server_->params();
  key_seen_.assign(params.size(), false);  // allocates once
  for (size_t i = 0; i < grads.size(); ++i) {
    const uint32_t key = grads[i].key;
    if (key >= params.size() || key_seen_[key]) {
      return Corruption(
          std::string(what) + ": tensor " + std::to_string(i) + " is key " +
          std::to_string(key) + ", " +
          (key >= params.size()
               ? "expected a key below " + std::to_string(params.size())
               : std::string("which an earlier tensor was")));
    }
    key_seen_[key] = true;
    if (server_->is_row_sparse(static_cast<int>(key))) {
      return Corruption(std::string(what) + ": tensor " + std::to_string(i) +
                        " is key " + std::to_string(key) + " (" +
                        KeyName(static_cast<int>(key)) +
                        "), which is row-sparse: expected its rows");
    }
    const wire::Codec codec = push_codecs_[key];
    PS_RETURN_IF_ERROR(
        CheckDescMatches(grads[i], key, params[key], what, codec));
    if (codec == wire::Codec::kRaw)
      continue;
    const uint64_t want = wire::CompressedBytes(
        codec, compression_.params, static_cast<size_t>(params[key].numel()));
    if (grads[i].nbytes != want) {
      return Corruption(std::string(what) + ": tensor " + std::to_string(i) +
                        " (key " + std::to_string(key) + ") has " +
                        std::to_string(grads[i].nbytes) + " bytes of " +
                        wire::CodecName(codec) + ", expected " +
                        std::to_string(want));
    }
  }
  return Status::Ok();
}

// A push is read a piece at a time, each checked for NaN and Inf while it
// is still in cache (OnPiece), into where the update rule wants it.
void Engine::PlanPieces(Peer& peer, const std::vector<wire::TensorDesc>& grads,
                        ReadPlan* plan) {
  constexpr uint64_t kPiece = ParameterServer::kPieceBytes;
  peer.pieces.clear();
  const auto& params = server_->params();
  // Sized before any piece points into it: records share the buffer.
  uint64_t largest = 0;
  for (const auto& desc : grads) {
    if (push_codecs_[desc.key] != wire::Codec::kRaw)
      largest = std::max(largest, desc.nbytes);
  }
  if (peer.record.size() < largest)
    peer.record.resize(largest);  // once per peer
  for (const auto& desc : grads) {
    const int k = static_cast<int>(desc.key);
    if (push_codecs_[k] != wire::Codec::kRaw) {
      PlanRecord(peer, desc, plan);
      continue;
    }
    const uint64_t nbytes = params[k].nbytes();
    for (uint64_t off = 0; off < nbytes; off += kPiece) {
      const uint64_t n = std::min(kPiece, nbytes - off);
      peer.pieces.push_back({k, off, n});
      plan->buffers.push_back({rule_->PieceBuffer(peer.worker, k, off), n});
    }
  }
}

// A compressed record is read whole, a piece at a time, into the peer's
// record buffer, and decoded once its last piece is in (AddRecord).
void Engine::PlanRecord(Peer& peer, const wire::TensorDesc& desc,
                        ReadPlan* plan) {
  constexpr uint64_t kPiece = ParameterServer::kPieceBytes;
  const int k = static_cast<int>(desc.key);
  for (uint64_t off = 0; off < desc.nbytes; off += kPiece) {
    const uint64_t n = std::min(kPiece, desc.nbytes - off);
    Peer::Piece piece{k, off, n};
    if (off + n == desc.nbytes)
      piece.record_bytes = desc.nbytes;
    peer.pieces.push_back(piece);
    plan->buffers.push_back({peer.record.data() + off, n});
  }
}

// Checked whole before any of it is added: a sum cannot be taken apart.
void Engine::AddRecord(Peer& peer, int key, uint64_t nbytes) {
  const wire::Codec codec = push_codecs_[key];
  const size_t n = static_cast<size_t>(server_->params()[key].numel());
  Status s =
      wire::Validate(codec, compression_.params, peer.record.data(), nbytes, n);
  if (!s.ok()) {
    peer.refused_key = key;
    peer.refused_why = s.message();
    return;
  }
  rule_->AddRecord(peer.worker, key, codec, compression_.params,
                   peer.record.data(), nbytes);
}

void Engine::OnPiece(PeerId id, size_t index) {
  Peer* peer = Find(id);
  if (!peer || peer->refused_key >= 0)
    return;  // the rest of a refused push is dropped
  const Peer::Piece& piece = peer->pieces[index];
  if (piece.rows != nullptr)
    return AddRowsPiece(*peer, index);
  if (push_codecs_[piece.key] != wire::Codec::kRaw) {
    if (piece.record_bytes > 0)
      AddRecord(*peer, piece.key, piece.record_bytes);
    return;
  }
  const char* data = rule_->PieceBuffer(peer->worker, piece.key, piece.offset);
  // Checked before it is added: a NaN in the sum could not be taken out.
  if (!AllFinite(data, piece.bytes,
                 server_->params()[piece.key].scalar_type())) {
    peer->refused_key = piece.key;
    return;
  }
  rule_->AddPiece(peer->worker, piece.key, piece.offset, piece.bytes);
}

Status Engine::OnPull(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kRegistered)
    return InvalidArgument("pull before register");
  if (batches_) {
    return InvalidArgument(
        "pull: the model trains on the server (--placement server)");
  }
  wire::Pull pull;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &pull));
  peer.want.clear();  // a pull returns whole tensors
  const uint64_t min_version =
      std::max(pull.min_version, peer.first_pull_min_version);
  peer.first_pull_min_version = 0;
  return AwaitVersion(peer, id, min_version, false);
}

// A reply of parameters once the server's version reaches `min_version`
// and, with `ssp`, once the worker is within the staleness bound.
Status Engine::AwaitVersion(Peer& peer, uint64_t id, uint64_t min_version,
                            bool ssp) {
  if (peer.reply_pending)
    return InvalidArgument("a pull is already pending");
  if (stop_training_ || (server_->version() >= min_version &&
                         (!ssp || ssp_.Allows(peer.worker)))) {
    SendParams(peer, id);
    return Status::Ok();
  }
  peer.reply_pending = true;
  peer.pending_id = id;
  peer.pending_min_version = min_version;
  peer.pending_ssp = ssp;
  peer.pending_since = now_;
  return Status::Ok();
}

Status Engine::OnPush(Peer& peer, uint64_t id) {
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

Result<bool> Engine::Step(Peer& peer, uint64_t version) {
  if (stop_training_)
    return false;  // the model is final: the push is answered only
  if (!rule_->has_quorum())
    last_progress_ = now_;  // a refused push is progress too
  const bool refused = peer.refused_key >= 0;
  if (refused)
    RefusePush(peer, version);
  auto stepped = rule_->Push(peer.worker, version, refused);
  if (stepped.ok() && !*stepped)
    ArmStepTimeout();
  return stepped;
}

// --step_timeout: the workers not in this long after a step's first push
// are stragglers for that step; it closes with the pushes it has.
void Engine::ArmStepTimeout() {
  const uint64_t version = server_->version();
  if (rule_->step_timeout() <= 0 || server_->pushes_this_step() == 0 ||
      step_deadline_version_ == version) {
    return;
  }
  step_deadline_version_ = version;
  step_deadline_ =
      now_ + std::chrono::duration_cast<EngineClock::duration>(
                 std::chrono::duration<double>(rule_->step_timeout()));
  outbox_->WakeAt(step_deadline_);
}

void Engine::OnTimer(Time now) {
  now_ = now;
  if (stopping_ || step_deadline_version_ != server_->version() ||
      now < step_deadline_)
    return;
  CloseTimedOutStep(step_deadline_version_);
}

void Engine::CloseTimedOutStep(uint64_t version) {
  if (stopping_ || server_->version() != version)
    return;
  if (fence_.Holds({WriteFence::Work::Kind::kCloseStep, -1, version, 0, 0}))
    return;
  ++timed_out_steps_;
  if (server_->CloseStep())
    OnNewVersion();
}

void Engine::RefusePush(const Peer& peer, uint64_t version) {
  ++refused_pushes_;
  const int key = peer.refused_key;
  const std::string name = key < static_cast<int>(fingerprint_.size())
                               ? fingerprint_[key].name
                               : "?";
  outbox_->Info("refused the push of rank " + std::to_string(peer.rank) +
                " for version " + std::to_string(version) + ": key " +
                std::to_string(key) + " (" + name + ") " +
                (peer.refused_why.empty() ? std::string("holds NaN or Inf")
                                          : peer.refused_why) +
                "; " +
                (spec_.mode == Mode::kSync ? "the step is skipped"
                                           : "it is not applied"));
}

// Sync: the parameters this push helps to make; async: the current ones;
// ssp: the current ones once this worker is within the staleness bound.
void Engine::AnswerPush(Peer& peer, uint64_t id) {
  if (!peer.push_is_push_pull) {
    peer.meta.clear();
    Reply(peer, wire::MsgType::kAck, id);
    return;
  }
  peer.want = peer.push.requests;
  Status s = AwaitVersion(peer, id, rule_->ReplyVersion(peer.push.version),
                          rule_->bounds_staleness());
  if (!s.ok())
    Refuse(peer, id, s);
}

void Engine::ReleaseReplies() {
  for (int w = 0; w < members_.num_workers(); ++w) {
    Peer* p = members_.peer(w);
    if (!p || !p->reply_pending)
      continue;
    if (!stop_training_) {
      if (server_->version() < p->pending_min_version)
        continue;
      if (p->pending_ssp && !ssp_.Allows(p->worker))
        continue;
    }
    p->reply_pending = false;
    p->pending_ssp = false;
    p->waiting_seconds += Seconds(p->pending_since);
    SendParams(*p, p->pending_id);
  }
}

void Engine::SendParams(Peer& peer, uint64_t id) {
  if (peer.closing)
    return;
  if (batches_)
    return SendBatchDone(peer, id);  // the model stays on the server
  params_msg_.version = server_->version();
  params_msg_.stop = stop_training_;
  params_msg_.members.clear();
  if (spec_.reassign_shards && server_->members() < server_->num_workers()) {
    for (int w = 0; w < server_->num_workers(); ++w) {
      if (server_->is_member(w))
        params_msg_.members.push_back(w);
    }
  }
  if (!peer.want.empty())
    return SendRows(peer, id);
  wire::EncodeMeta(params_msg_, &peer.meta);
  out_.type = wire::MsgType::kParams;
  out_.request_id = id;
  out_.meta = peer.meta;
  out_.gate = &step_gate_;
  out_.data.clear();
  for (int k = 0; k < server_->num_keys(); ++k) {
    const auto [data, nbytes] = ParamBytes(k);
    out_.data.push_back({data, nbytes, static_cast<uint32_t>(k) + 1});
  }
  fence_.Sent(peer.id);
  outbox_->Send(peer.id, out_);
}

std::pair<const void*, uint64_t> Engine::ParamBytes(int key) {
  const at::Tensor& p = server_->params()[key];
  if (pull_.codec(key) == wire::Codec::kRaw)
    return {p.data_ptr(), p.nbytes()};
  if (key < server_->first_unstepped_key())
    pull_.Refresh(key, p, server_->version());
  return {pull_.data(key), pull_.nbytes(key)};
}

}  // namespace pstrain::ps
