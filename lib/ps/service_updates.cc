// The update path of the Service: pushes (checked, planned, reduced or
// applied), pulls waiting for a version, and parameters sent straight from
// their storage once no step can change them under the write.

#include <algorithm>
#include <optional>

#include <asio/post.hpp>

#include "ps/finite_check.h"
#include "ps/service.h"
#include "ps/service_peer.h"
#include "ps/tensor_codec.h"

namespace pstrain::ps {

namespace {

// Sync pushes stream through a chunk of this many bytes per connection and
// are added into the accumulators piece by piece.
constexpr uint64_t kChunkBytes = ParameterServer::kPieceBytes;

}  // namespace

// A push's descriptors are checked and its bytes planned before any is read:
// async into the worker's gradient buffers, sync through the chunk.
Status Service::PlanPush(net::Connection& conn, Peer& peer, wire::MsgType type,
                         std::string_view meta,
                         std::vector<asio::mutable_buffer>* dst) {
  const bool push_pull = type == wire::MsgType::kPushPull;
  const char* what = wire::MsgTypeName(type);
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument(std::string(what) + " before register");
  }
  server_->StepAllKeys();  // its pieces go into the accumulators
  peer.push_is_push_pull = push_pull;
  if (push_pull) {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push));
  } else {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.push_only));
  }
  const auto& grads = push_pull ? peer.push.grads : peer.push_only.grads;
  if (grads.size() != static_cast<size_t>(server_->num_keys())) {
    return Corruption(std::string(what) + " carries " +
                      std::to_string(grads.size()) + " tensors, expected " +
                      std::to_string(server_->num_keys()));
  }
  PS_RETURN_IF_ERROR(CheckPushKeys(grads, what));
  const uint64_t version = push_pull ? peer.push.version : peer.push_only.version;
  PS_RETURN_IF_ERROR(server_->CheckPush(peer.worker, version));
  peer.refused_key = -1;
  PlanPieces(peer, grads, dst);
  conn.ReadPieceByPiece();
  return Status::Ok();
}

// A push names every key once, in any order: a worker sends its gradients
// in the order backward computes them (net/send_gate.h).
Status Service::CheckPushKeys(const std::vector<wire::TensorDesc>& grads,
                              const char* what) {
  const auto& params = server_->params();
  key_seen_.assign(params.size(), false);  // allocates once
  for (size_t i = 0; i < grads.size(); ++i) {
    const uint32_t key = grads[i].key;
    if (key >= params.size() || key_seen_[key]) {
      return Corruption(std::string(what) + ": tensor " + std::to_string(i) +
                        " is key " + std::to_string(key) + ", " +
                        (key >= params.size()
                             ? "expected a key below " + std::to_string(params.size())
                             : std::string("which an earlier tensor was")));
    }
    key_seen_[key] = true;
    PS_RETURN_IF_ERROR(CheckDescMatches(grads[i], key, params[key], what));
  }
  return Status::Ok();
}

// A push is read a chunk-full at a time, each piece checked for NaN and
// Inf while it is still in cache (OnPiece). Sync: every piece goes through
// the peer's chunk and is added into the accumulator at once. Async, ssp,
// buffered sync: pieces land in place in the worker's gradient buffer.
void Service::PlanPieces(Peer& peer, const std::vector<wire::TensorDesc>& grads,
                         std::vector<asio::mutable_buffer>* dst) {
  const bool buffered = server_->buffers_pushes();
  uint64_t total = 0;
  for (const auto& p : server_->params()) total += p.nbytes();
  if (!buffered && peer.chunk.size() < std::min(total, kChunkBytes)) {
    peer.chunk.resize(std::min(total, kChunkBytes));
  }
  peer.pieces.clear();
  const auto& params = server_->params();
  for (const auto& desc : grads) {
    const int k = static_cast<int>(desc.key);
    const uint64_t nbytes = params[k].nbytes();
    char* place = buffered
        ? static_cast<char*>(server_->grad_buffer(peer.worker)[k].data_ptr())
        : nullptr;
    for (uint64_t off = 0; off < nbytes; off += kChunkBytes) {
      const uint64_t n = std::min(kChunkBytes, nbytes - off);
      peer.pieces.push_back({k, off, n});
      dst->emplace_back(buffered ? place + off : peer.chunk.data(), n);
    }
  }
}

void Service::OnPiece(net::Connection& conn, size_t index) {
  Peer& peer = *peers_.at(&conn);
  if (peer.refused_key >= 0) return;  // the rest of a refused push is dropped
  const Peer::Piece& piece = peer.pieces[index];
  const bool buffered = server_->buffers_pushes();
  const char* data =
      buffered ? static_cast<const char*>(
                     server_->grad_buffer(peer.worker)[piece.key].data_ptr()) +
                     piece.offset
               : peer.chunk.data();
  // Checked before it is added: a NaN in the sum could not be taken out.
  const auto dtype = server_->params()[piece.key].scalar_type();
  if (!AllFinite(data, piece.bytes, dtype)) {
    peer.refused_key = piece.key;
    return;
  }
  if (!buffered) {
    server_->Accumulate(peer.worker, piece.key, piece.offset, data, piece.bytes);
  }
}

Status Service::OnPull(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.stage != Peer::Stage::kRegistered) {
    return InvalidArgument("pull before register");
  }
  wire::Pull pull;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &pull));
  const uint64_t min_version = std::max(pull.min_version, peer.first_pull_min_version);
  peer.first_pull_min_version = 0;
  return AwaitVersion(peer, id, min_version);
}

// A reply of parameters once the server's version reaches `min_version`
// and, with `ssp`, once the worker is within the staleness bound.
Status Service::AwaitVersion(Peer& peer, uint64_t id, uint64_t min_version,
                             bool ssp) {
  if (peer.reply_pending) return InvalidArgument("a pull is already pending");
  if (stop_training_ || (server_->version() >= min_version && (!ssp || SspAllows(peer)))) {
    SendParams(peer, id);
    return Status::Ok();
  }
  peer.reply_pending = true;
  peer.pending_id = id;
  peer.pending_min_version = min_version;
  peer.pending_ssp = ssp;
  peer.pending_since = Clock::now();
  return Status::Ok();
}

Status Service::OnPush(Peer& peer, uint64_t id) {
  NoteClock(peer);
  if (params_in_flight_ > 0) {
    // Parameters are being written straight from their storage; stepping
    // now would change bytes on their way out. Apply once the writes end.
    deferred_.push_back({&peer, id});
    return Status::Ok();
  }
  auto stepped = Step(peer);
  if (!stepped.ok()) return stepped.status();
  if (*stepped) OnNewVersion();
  AnswerPush(peer, id);
  return Status::Ok();
}

Result<bool> Service::Step(Peer& peer) {
  if (stop_training_) return false;  // the model is final: the push is answered only
  const uint64_t version =
      peer.push_is_push_pull ? peer.push.version : peer.push_only.version;
  if (server_->buffers_pushes() && spec_.mode != Mode::kSync) {
    last_progress_ = Clock::now();
  }
  if (peer.refused_key >= 0) {
    RefusePush(peer, version);
    // Buffered: never applied (a sync step closes without it, by
    // --backup_workers or --step_timeout).
    if (server_->buffers_pushes()) return false;
    // Streaming sync: the push still counts so that the step closes, but
    // earlier finite pieces are in the sums already, so the step is skipped.
    server_->DiscardStep();
  }
  auto stepped = server_->Push(peer.worker, version);
  if (stepped.ok() && !*stepped) ArmStepTimer();
  return stepped;
}

// --step_timeout: the workers not in this long after a step's first push
// are stragglers for that step; it closes with the pushes it has.
void Service::ArmStepTimer() {
  const uint64_t version = server_->version();
  if (spec_.step_timeout <= 0 || server_->pushes_this_step() == 0 ||
      step_timer_version_ == version) {
    return;
  }
  step_timer_version_ = version;
  step_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(spec_.step_timeout)));
  step_timer_.async_wait([this, version](const std::error_code& ec) {
    if (!ec) OnStepTimeout(version);
  });
}

void Service::OnStepTimeout(uint64_t version) {
  if (stopping_ || server_->version() != version) return;
  if (params_in_flight_ > 0) {  // the step may not change bytes being sent
    step_timer_.expires_after(std::chrono::milliseconds(1));
    step_timer_.async_wait([this, version](const std::error_code& ec) {
      if (!ec) OnStepTimeout(version);
    });
    return;
  }
  ++timed_out_steps_;
  if (server_->CloseStep()) OnNewVersion();
}

void Service::RefusePush(const Peer& peer, uint64_t version) {
  ++refused_pushes_;
  const int key = peer.refused_key;
  const std::string name =
      key < static_cast<int>(fingerprint_.size()) ? fingerprint_[key].name : "?";
  log_->Info("refused the push of rank " + std::to_string(peer.rank) +
             " for version " + std::to_string(version) + ": key " +
             std::to_string(key) + " (" + name + ") holds NaN or Inf; " +
             (spec_.mode == Mode::kSync ? "the step is skipped"
                                         : "it is not applied"));
}

void Service::AnswerPush(Peer& peer, uint64_t id) {
  if (!peer.push_is_push_pull) {
    peer.meta.clear();
    Reply(peer, wire::MsgType::kAck, id);
    return;
  }
  // Sync: the parameters this push helps to make; async: the current ones;
  // ssp: the current ones once this worker is within the staleness bound.
  const uint64_t version = peer.push.version;
  Status s = AwaitVersion(peer, id, spec_.mode == Mode::kSync ? version + 1 : 0,
                          spec_.mode == Mode::kSsp);
  if (!s.ok()) peer.conn->SendErrorAndClose(id, s);
}

// The slowest clock among the workers other than `worker` that have not
// finished (joined or not yet: a late joiner counts with clock 0); none ->
// no bound.
std::optional<uint64_t> Service::SlowestOtherClock(int worker) const {
  std::optional<uint64_t> slowest;
  for (int w = 0; w < spec_.num_workers(); ++w) {
    if (w == worker || done_workers_[w] || lost_[w]) continue;
    if (!slowest || clocks_[w] < *slowest) slowest = clocks_[w];
  }
  return slowest;
}

// Stale Synchronous Parallel (Ho et al., NIPS 2013, section 3): a worker
// that has finished `clock` steps may start the next one while it is at most
// `staleness` steps ahead of the slowest.
bool Service::SspAllows(const Peer& peer) const {
  auto slowest = SlowestOtherClock(peer.worker);
  return !slowest || clocks_[peer.worker] <= *slowest + spec_.staleness;
}

// On a push's arrival: the worker's clock advances, and the server records
// how far ahead of the slowest it computed that step (SSP's own check).
void Service::NoteClock(const Peer& peer) {
  const uint64_t computed_at = clocks_[peer.worker]++;
  auto slowest = SlowestOtherClock(peer.worker);
  if (slowest && computed_at > *slowest) {
    max_clock_gap_ = std::max(max_clock_gap_, computed_at - *slowest);
  }
}

void Service::ReleaseReplies() {
  for (Peer* p : workers_) {
    if (!p || !p->reply_pending) continue;
    if (!stop_training_) {
      if (server_->version() < p->pending_min_version) continue;
      if (p->pending_ssp && !SspAllows(*p)) continue;
    }
    p->reply_pending = false;
    p->pending_ssp = false;
    p->waiting_seconds +=
        std::chrono::duration<double>(Clock::now() - p->pending_since).count();
    SendParams(*p, p->pending_id);
  }
}

// Applies the pushes that waited for parameter writes: all steps first, then
// all answers, so no step changes parameters that an answer is sending.
void Service::RunDeferred() {
  std::vector<Deferred> batch;
  batch.swap(deferred_);
  bool stepped = false;
  for (Deferred& d : batch) {
    auto s = Step(*d.peer);
    if (!s.ok()) {
      d.peer->conn->SendErrorAndClose(d.id, s.status());
      d.peer = nullptr;
      continue;
    }
    stepped = stepped || *s;
  }
  if (stepped) OnNewVersion();
  for (Deferred& d : batch) {
    if (d.peer) AnswerPush(*d.peer, d.id);
  }
}

void Service::OnWritten(net::Connection& conn, wire::MsgType type) {
  if (type != wire::MsgType::kParams) return;
  auto it = peers_.find(&conn);
  if (it == peers_.end() || it->second->params_in_flight == 0) return;
  --it->second->params_in_flight;
  if (--params_in_flight_ == 0) RunPending();
}

// A sync step's keys are stepped one per handler, in key order, after the
// replies are queued: each key's parameters leave as soon as they are
// stepped (the frames wait on step_gate_), while the next is stepped, and
// workers start their next forward on the first layers meanwhile
// (worker/param_arrivals.h).
void Service::OnNewVersion() {
  last_progress_ = Clock::now();
  if (server_->first_unstepped_key() < server_->num_keys() && !stepping_keys_) {
    step_gate_.Reset();
    stepping_keys_ = true;
  }
  ReleaseReplies();
  if (!stepping_keys_) {
    TakeDueSnapshots();
    if (on_version_) on_version_(server_->version());
    return;
  }
  StepKeys();
}

void Service::StepKeys() {
  const int key = server_->StepNextKey();
  if (key >= 0) {
    step_gate_.OpenTo(static_cast<uint32_t>(key) + 1);
    ResumeParamWrites();
    // Between two keys the io loop runs: the writes go on.
    asio::post(*io_, [this] { StepKeys(); });
    return;
  }
  stepping_keys_ = false;
  step_gate_.OpenTo(net::SendGate::kAll);
  ResumeParamWrites();
  TakeDueSnapshots();
  if (on_version_) on_version_(server_->version());
}

void Service::ResumeParamWrites() {
  for (auto& [conn, peer] : peers_) {
    if (peer->params_in_flight > 0) conn->ResumeWrite();
  }
}

void Service::SendParams(Peer& peer, uint64_t id) {
  if (peer.conn->closed()) return;
  params_msg_.version = server_->version();
  params_msg_.stop = stop_training_;
  params_msg_.members.clear();
  if (spec_.reassign_shards && server_->members() < server_->num_workers()) {
    for (int w = 0; w < server_->num_workers(); ++w) {
      if (server_->is_member(w)) params_msg_.members.push_back(w);
    }
  }
  wire::EncodeMeta(params_msg_, &peer.meta);
  net::FrameBuffers& frame = peer.conn->NewFrame();
  frame.Reset(wire::MsgType::kParams, id, peer.meta);
  frame.SetGate(&step_gate_);
  const auto& params = server_->params();
  for (size_t k = 0; k < params.size(); ++k) {
    frame.AddData(params[k].data_ptr(), params[k].nbytes(), static_cast<uint32_t>(k) + 1);
  }
  ++peer.params_in_flight;
  ++params_in_flight_;
  peer.conn->Send(frame);
}

}  // namespace pstrain::ps
