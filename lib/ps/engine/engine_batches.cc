// --placement server, the RPC tutorial's scheme: a worker sends batches
// (push_batch), the BatchRunner runs forward and backward on the server's
// model, and what it gives is applied as that worker's push would be, by
// the same update rule; the worker hears batch_done once the version its
// push helps to make exists (sync) or at once (async).

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"

namespace pstrain::ps {

// Checked from its descriptors, before a byte of it is read: a batch the
// model cannot take is refused naming both shapes, and only that worker
// is lost.
Status Engine::PlanBatch(Peer& from, std::string_view meta, ReadPlan* plan) {
  if (!batches_.on()) {
    return InvalidArgument(
        "push_batch: the job trains on the workers (--placement worker)");
  }
  WorkerPeer* worker = Registered(from);
  if (!worker)
    return InvalidArgument("push_batch before register");
  WorkerPeer& peer = *worker;
  if (peer.batch.in_flight)
    return InvalidArgument("push_batch: the last batch is still computing");
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer.batch.msg));
  Status fits = batches_.Check(peer.batch.msg);
  if (!fits.ok()) {
    outbox_->Info("refused push_batch from rank " + std::to_string(peer.rank) +
                  ": " + fits.message());
    return fits;
  }
  rule_->StepAllKeys();  // the batch computes on a whole version
  PS_RETURN_IF_ERROR(members_.CheckMember(peer.worker));
  PS_RETURN_IF_ERROR(rule_->CheckPush(peer.worker, server_->version()));
  BatchDesk::Plan(peer, plan);
  return Status::Ok();
}

Status Engine::OnPushBatch(WorkerPeer& peer, uint64_t id) {
  watch_.Progress(now_);
  batches_.Run(peer, id, server_->version());
  return Status::Ok();
}

void Engine::OnBatchDone(const BatchResult& r, Time now) {
  now_ = now;
  WorkerPeer* peer = peers_.FindWorker(r.peer);
  if (!peer || peer->closing || stopping_)
    return;  // the worker is gone: its batch goes with it
  peer->batch.in_flight = false;
  peer->last_heard = now;
  if (!r.status.ok()) {
    outbox_->Info("refused push_batch from rank " + std::to_string(peer->rank) +
                  ": " + r.status.message());
    return Refuse(*peer, r.request_id, r.status);
  }
  peer->batch.loss = r.loss;
  ssp_.NotePush(peer->worker);
  BatchDesk::AddKeys(*peer, *r.keys, rule_.get());
  auto stepped = Step(*peer, r.version);
  if (!stepped.ok())
    return Refuse(*peer, r.request_id, stepped.status());
  if (*stepped)
    OnNewVersion();
  Status s = AwaitVersion(*peer, r.request_id, rule_->ReplyVersion(r.version),
                          rule_->bounds_staleness());
  if (!s.ok())
    Refuse(*peer, r.request_id, s);
}

void Engine::SendBatchDone(WorkerPeer& peer, uint64_t id) {
  wire::EncodeMeta(
      wire::BatchDone{server_->version(), peer.batch.loss, stop_training_},
      &peer.meta);
  Reply(peer, wire::MsgType::kBatchDone, id);
}

}  // namespace pstrain::ps
