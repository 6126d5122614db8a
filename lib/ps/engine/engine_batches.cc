// --placement server, the RPC tutorial's scheme: a worker sends batches
// (push_batch), the BatchRunner runs forward and backward on the server's
// model, and what it gives is applied as that worker's push would be, by
// the same update rule; the worker hears batch_done once the version its
// push helps to make exists (sync) or at once (async).

#include <cstring>

#include <ATen/ATen.h>

#include "ps/engine/engine.h"
#include "ps/engine/finite_check.h"
#include "ps/engine/peer.h"

namespace pstrain::ps {
namespace {

std::vector<int64_t> Sample(const wire::TensorDesc& d) {
  return std::vector<int64_t>(d.dims.begin() + 1, d.dims.begin() + d.ndim);
}

// "[8, 7]", or with `sample` "[B, 7]".
std::string DimsText(const std::vector<int64_t>& dims, const char* first) {
  std::string s = "[";
  s += first;
  for (int64_t d : dims)
    s += ", " + std::to_string(d);
  return s + "]";
}

// `*t` as a tensor of `d`'s dtype and shape, reused while they stay.
void Reuse(const wire::TensorDesc& d, at::Tensor* t) {
  const std::vector<int64_t> dims(d.dims.begin(), d.dims.begin() + d.ndim);
  const at::ScalarType type =
      d.dtype == wire::DType::kInt64 ? at::kLong : at::kFloat;
  if (t->defined() && t->scalar_type() == type && t->sizes().equals(dims))
    return;
  *t = at::empty(dims, at::TensorOptions().dtype(type));
}

}  // namespace

// Checked from its descriptors, before a byte of it is read: a batch the
// model cannot take is refused naming both shapes, and only that worker
// is lost.
Status Engine::CheckBatch(const wire::PushBatch& b) const {
  const BatchShapes& want = placed_.shapes;
  const std::string b_rows = std::to_string(b.x.dims[0]);
  if (Sample(b.x) != want.x_sample) {
    return InvalidArgument(
        "push_batch: x is float32 " + DimsText(Sample(b.x), b_rows.c_str()) +
        "; the model takes float32 " + DimsText(want.x_sample, "B"));
  }
  const wire::DType y_type =
      want.y_float ? wire::DType::kFloat32 : wire::DType::kInt64;
  if (b.y.dtype != y_type || Sample(b.y) != want.y_sample) {
    return InvalidArgument(
        std::string("push_batch: y is ") + wire::DTypeName(b.y.dtype) + " " +
        DimsText(Sample(b.y), b_rows.c_str()) + "; expected " +
        wire::DTypeName(y_type) + " " + DimsText(want.y_sample, "B"));
  }
  return Status::Ok();
}

Status Engine::PlanBatch(Peer& from, std::string_view meta, ReadPlan* plan) {
  if (!placed_.runner) {
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
  Status fits = CheckBatch(peer.batch.msg);
  if (!fits.ok()) {
    outbox_->Info("refused push_batch from rank " + std::to_string(peer.rank) +
                  ": " + fits.message());
    return fits;
  }
  rule_->StepAllKeys();  // the batch computes on a whole version
  PS_RETURN_IF_ERROR(members_.CheckMember(peer.worker));
  PS_RETURN_IF_ERROR(rule_->CheckPush(peer.worker, server_->version()));
  Reuse(peer.batch.msg.x, &peer.batch.x);
  Reuse(peer.batch.msg.y, &peer.batch.y);
  plan->buffers.push_back({peer.batch.x.data_ptr(), peer.batch.msg.x.nbytes});
  plan->buffers.push_back({peer.batch.y.data_ptr(), peer.batch.msg.y.nbytes});
  return Status::Ok();
}

Status Engine::OnPushBatch(WorkerPeer& peer, uint64_t id) {
  peer.batch.in_flight = true;
  watch_.Progress(now_);
  placed_.runner->Run(BatchJob{peer.id, id, peer.worker, server_->version(),
                               peer.batch.x, peer.batch.y});
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
  AddBatchKeys(*peer, *r.keys);
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

// The keys go in as a push's pieces do, each checked for NaN and Inf.
void Engine::AddBatchKeys(WorkerPeer& peer,
                          const std::vector<at::Tensor>& keys) {
  constexpr uint64_t kPiece = ParameterServer::kPieceBytes;
  peer.refused_key = -1;
  peer.refused_why.clear();
  for (int k = 0; k < server_->num_keys() && peer.refused_key < 0; ++k) {
    const auto* src = static_cast<const char*>(keys[k].data_ptr());
    const uint64_t nbytes = keys[k].nbytes();
    for (uint64_t off = 0; off < nbytes; off += kPiece) {
      const uint64_t n = std::min(kPiece, nbytes - off);
      char* dst = rule_->PieceBuffer(peer.worker, k, off);
      std::memcpy(dst, src + off, n);
      if (!AllFinite(dst, n, keys[k].scalar_type())) {
        peer.refused_key = k;  // the step goes on without it, as a push's
        break;
      }
      rule_->AddPiece(peer.worker, k, off, n);
    }
  }
}

void Engine::SendBatchDone(WorkerPeer& peer, uint64_t id) {
  wire::EncodeMeta(
      wire::BatchDone{server_->version(), peer.batch.loss, stop_training_},
      &peer.meta);
  Reply(peer, wire::MsgType::kBatchDone, id);
}

}  // namespace pstrain::ps
