// What one part's answer means for the others: a push applied closes a
// step, whose replies the ReplyDesk releases while the StepDriver updates
// its keys, and whose complete version the SnapshotDesk copies; a worker
// joining, finishing or lost changes the quorum, the clocks and the
// replies that wait. No part calls another; the Engine does, here.

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ps/engine/batch_desk.h"
#include "ps/engine/engine.h"
#include "ps/engine/handshake.h"
#include "ps/engine/master_desk.h"
#include "ps/engine/membership.h"
#include "ps/engine/peer.h"
#include "ps/engine/peer_table.h"
#include "ps/engine/peer_watch.h"
#include "ps/engine/reply_desk.h"
#include "ps/engine/snapshot_desk.h"
#include "ps/engine/step_driver.h"
#include "ps/engine/write_fence.h"
#include "ps/rules/update_rule.h"
#include "ps/store/parameter_server.h"
#include "report/worker_stats.h"

namespace pstrain::ps {

Status Engine::OnRegister(Peer& peer, uint64_t id, std::string_view meta) {
  PS_ASSIGN_OR_RETURN(WorkerPeer * worker,
                      handshake_->ReadRegister(peer, meta, *members_));
  const int w = worker->worker;
  if (members_->lost(w)) {
    // Back in the quorum from the next version (or this one, if no push of
    // it is in yet); in ssp at the slowest clock, so that it holds no one
    // back.
    PS_ASSIGN_OR_RETURN(const bool now, steps_->Rejoin(w));
    replies_->SetTraining(w, true);
    worker->first_pull_min_version =
        steps_->rule().RejoinPullVersion(server_->version(), now);
    outbox_->Info("rank " + std::to_string(worker->rank) +
                  " rejoined at version " + std::to_string(server_->version()));
  }
  worker->stage = Peer::Stage::kRegistered;
  replies_->Forget(w);  // a new connection has nothing held
  members_->Register(w, worker, run_.now);
  watch_->Progress(run_.now);
  outbox_->Info("rank " + std::to_string(worker->rank) + " joined from " +
                worker->remote);
  worker->meta.clear();
  wire::EncodeMeta(wire::Ack{}, &worker->meta);
  Reply(*outbox_, *worker, wire::MsgType::kAck, id);
  return Status::Ok();
}

Status Engine::OnDone(Peer& from, uint64_t id, std::string_view meta) {
  WorkerPeer* peer = Registered(from);
  if (!peer)
    return InvalidArgument("done before register");
  wire::Done done;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &done));
  const auto json = nlohmann::json::parse(done.json, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return Corruption("done: stats are not a JSON object");
  PS_ASSIGN_OR_RETURN(report::WorkerStats stats,
                      report::WorkerStatsFromJson(json));
  peer->stage = Peer::Stage::kDone;
  members_->Finish(peer->worker, std::move(stats), peer->waiting_seconds,
                   run_.now);
  replies_->SetTraining(peer->worker, false);
  // Sync: a worker that is done no longer holds a step back. (The run
  // cannot end here: the worker is not counted done yet.)
  if (steps_->rule().has_quorum() && members_->in_quorum(peer->worker))
    LeaveQuorum(peer->worker);
  ReleaseReplies();  // a finished worker no longer holds the others back
  watch_->Progress(run_.now);
  peer->meta.clear();
  wire::EncodeMeta(wire::Ack{}, &peer->meta);
  Reply(*outbox_, *peer, wire::MsgType::kAck, id);
  if (master_->RunOver(*members_))
    Shutdown();
  return Status::Ok();
}

// A push's bytes went where StepDriver::PlanPush or the BatchDesk put them,
// which only a registered worker's get.
Status Engine::OnWorkerRequest(Peer& from, const wire::FrameHeader& header,
                               std::string_view meta) {
  const uint64_t id = header.request_id;
  WorkerPeer* peer = Registered(from);
  if (!peer) {
    return InvalidArgument(std::string(wire::MsgTypeName(header.type)) +
                           " before register");
  }
  if (header.type == wire::MsgType::kPull) {
    PS_ASSIGN_OR_RETURN(ReplyAnswer answer,
                        replies_->OnPull(*peer, id, meta, batches_->on(),
                                         snapshots_->replicated(), run_.now));
    SendReply(*peer, id, answer);
    return Status::Ok();
  }
  if (header.type == wire::MsgType::kPushBatch) {
    watch_->Progress(run_.now);
    batches_->Run(*peer, id, server_->version());
    return Status::Ok();
  }
  if (std::exchange(peer->duplicate, false)) {
    outbox_->Info("rank " + std::to_string(peer->rank) +
                  " sent its push for version " +
                  std::to_string(peer->pushed_version()) +
                  " again; it is applied already: dropped");
  } else {
    replies_->NotePush(peer->worker);
    if (steps_->Holds({FenceWork::Kind::kPush, -1, 0, peer->id, id}))
      return Status::Ok();
    PS_ASSIGN_OR_RETURN(const bool closed,
                        steps_->Apply(*peer, peer->pushed_version(), run_.now));
    if (closed)
      OnStepClosed();
  }
  SendReply(
      *peer, id,
      replies_->AnswerPush(*peer, id, snapshots_->replicated(), run_.now));
  return Status::Ok();
}

void Engine::OnBatchDone(const BatchResult& r, Time now) {
  run_.now = now;
  WorkerPeer* peer = peers_->FindWorker(r.peer);
  if (!peer || peer->closing || run_.stopping)
    return;  // the worker is gone: its batch goes with it
  peer->batch.in_flight = false;
  peer->last_heard = now;
  if (!r.status.ok()) {
    outbox_->Info("refused push_batch from rank " + std::to_string(peer->rank) +
                  ": " + r.status.message());
    return Refuse(*outbox_, *peer, r.request_id, r.status);
  }
  peer->batch.loss = r.loss;
  replies_->NotePush(peer->worker);
  steps_->AddBatch(*peer, *r.keys);
  auto closed = steps_->Apply(*peer, r.version, now);
  if (!closed.ok())
    return Refuse(*outbox_, *peer, r.request_id, closed.status());
  if (*closed)
    OnStepClosed();
  const UpdateRule& rule = steps_->rule();
  SendReply(
      *peer, r.request_id,
      replies_->Await(*peer, r.request_id, rule.ReplyVersion(r.version),
                      rule.bounds_staleness(), snapshots_->replicated(), now));
}

void Engine::SendReply(WorkerPeer& peer, uint64_t id,
                       const Result<ReplyAnswer>& answer) {
  if (!answer.ok())
    return Refuse(*outbox_, peer, id, answer.status());
  const bool ahead = *answer == ReplyAnswer::kAhead;
  if ((*answer != ReplyAnswer::kNow && !ahead) || peer.closing)
    return;
  if (batches_->on())
    return replies_->SendBatchDone(peer, id);  // the model stays on the server
  if (replies_->wants_rows(peer.worker))
    steps_->UpdateAllKeys();  // rows are gathered from whole tables
  steps_->NoteSent(peer.worker);
  steps_->Sent(peer.id);
  // A reply held for the others (or for the standbys' copy) was waited
  // for: the worker's silence counts from its answer.
  peer.last_heard = std::max(peer.last_heard, run_.now);
  replies_->SendParams(peer, id, ahead);
}

void Engine::ReleaseReplies() {
  for (const ReplyDesk::Due& d :
       replies_->TakeDue(snapshots_->replicated(), run_.now))
    SendReply(*d.peer, d.id, ReplyAnswer::kNow);
}

// A sync step's keys are updated one per Continue, in the step's order,
// after the replies are queued: each key's parameters leave as soon as it
// is updated, while the next is updated. Keys updated ahead of the close
// are skipped.
void Engine::OnStepClosed() {
  watch_->Progress(run_.now);
  const bool was_ahead = steps_->CloseVersion();
  ReleaseReplies();
  if (!steps_->updating()) {
    if (was_ahead)
      steps_->OpenAfterAhead();
    return snapshots_->Complete(run_.now);
  }
  if (!steps_->UpdateNextKey())
    return;
  snapshots_->Complete(run_.now);
  for (int k : steps_->rule().step_order().keys())
    KeyIn(k);  // keys of the next step that came in meanwhile
}

// Streaming sync: the first key ahead of the close releases the replies of
// the next version that wait (ReplyDesk::TakeAhead).
void Engine::KeyIn(int key) {
  if (run_.stopping || !steps_->MayUpdateAhead(key))
    return;
  if (!steps_->ahead()) {
    if (!steps_->StartAhead())
      return;
    for (const ReplyDesk::Due& d : replies_->TakeAhead(run_.now))
      SendReply(*d.peer, d.id, ReplyAnswer::kAhead);
  }
  steps_->UpdateAhead(key);
}

// What waited for the parameter writes, in order: lost and finished
// workers leave the quorum, timed-out steps close, then the held pushes.
void Engine::RunFenced() {
  const std::vector<FenceWork>& work = steps_->TakeWaiting();
  using Kind = FenceWork::Kind;
  for (const auto& w : work) {
    if (w.kind == Kind::kRemoveWorker && LeaveQuorum(w.worker) &&
        master_->RunOver(*members_))
      Shutdown();
  }
  for (const auto& w : work) {
    if (w.kind == Kind::kCloseStep && !run_.stopping &&
        steps_->CloseTimedOut(w.version) == StepDriver::Outcome::kClosed)
      OnStepClosed();
  }
  RunHeldPushes(work);
  for (int k : steps_->rule().step_order().keys())
    KeyIn(k);  // keys that were in while replies were on the wire
}

// All steps first, then all answers, so that no step changes parameters
// that an answer is sending. A removal above may be sending parameters
// already: then the pushes wait again.
void Engine::RunHeldPushes(const std::vector<FenceWork>& work) {
  if (!steps_->fence_open()) {
    for (const auto& w : work) {
      if (w.kind == FenceWork::Kind::kPush)
        (void)steps_->Holds(w);
    }
    return;
  }
  bool closed = false;
  for (const auto& w : work) {
    WorkerPeer* peer =
        w.kind == FenceWork::Kind::kPush ? peers_->FindWorker(w.peer) : nullptr;
    if (!peer)
      continue;
    // Sends nothing: the fence stays open.
    auto s = steps_->Apply(*peer, peer->pushed_version(), run_.now);
    if (!s.ok()) {
      Refuse(*outbox_, *peer, w.request_id, s.status());
      continue;
    }
    closed = closed || *s;
  }
  if (closed)
    OnStepClosed();
  for (const auto& w : work) {
    WorkerPeer* peer =
        w.kind == FenceWork::Kind::kPush ? peers_->FindWorker(w.peer) : nullptr;
    if (peer && !peer->closing) {
      SendReply(*peer, w.request_id,
                replies_->AnswerPush(*peer, w.request_id,
                                     snapshots_->replicated(), run_.now));
    }
  }
}

bool Engine::LeaveQuorum(int w) {
  const StepDriver::Outcome outcome = steps_->RemoveWorker(w);
  if (outcome == StepDriver::Outcome::kHeld)
    return false;
  if (outcome == StepDriver::Outcome::kClosed)
    OnStepClosed();
  ReleaseReplies();  // ssp: the lost worker holds no one back
  for (int k : steps_->rule().step_order().keys())
    KeyIn(k);  // keys that waited only for it
  return true;
}

}  // namespace pstrain::ps
