#include "ps/engine/batch_desk.h"

#include <string>

#include <ATen/ATen.h>

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

Status BatchDesk::Check(const wire::PushBatch& b) const {
  const std::string b_rows = std::to_string(b.x.dims[0]);
  if (Sample(b.x) != shapes_.x_sample) {
    return InvalidArgument(
        "push_batch: x is float32 " + DimsText(Sample(b.x), b_rows.c_str()) +
        "; the model takes float32 " + DimsText(shapes_.x_sample, "B"));
  }
  const wire::DType y_type =
      shapes_.y_float ? wire::DType::kFloat32 : wire::DType::kInt64;
  if (b.y.dtype != y_type || Sample(b.y) != shapes_.y_sample) {
    return InvalidArgument(
        std::string("push_batch: y is ") + wire::DTypeName(b.y.dtype) + " " +
        DimsText(Sample(b.y), b_rows.c_str()) + "; expected " +
        wire::DTypeName(y_type) + " " + DimsText(shapes_.y_sample, "B"));
  }
  return Status::Ok();
}

Result<WorkerPeer*> BatchDesk::Accept(Peer& from, std::string_view meta,
                                      Outbox& outbox) const {
  if (!on()) {
    return InvalidArgument(
        "push_batch: the job trains on the workers (--placement worker)");
  }
  WorkerPeer* peer = Registered(from);
  if (!peer)
    return InvalidArgument("push_batch before register");
  if (peer->batch.in_flight)
    return InvalidArgument("push_batch: the last batch is still computing");
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &peer->batch.msg));
  Status fits = Check(peer->batch.msg);
  if (!fits.ok()) {
    outbox.Info("refused push_batch from rank " + std::to_string(peer->rank) +
                ": " + fits.message());
    return fits;
  }
  return peer;
}

void BatchDesk::Plan(WorkerPeer& peer, ReadPlan* plan) {
  Reuse(peer.batch.msg.x, &peer.batch.x);
  Reuse(peer.batch.msg.y, &peer.batch.y);
  plan->buffers.push_back({peer.batch.x.data_ptr(), peer.batch.msg.x.nbytes});
  plan->buffers.push_back({peer.batch.y.data_ptr(), peer.batch.msg.y.nbytes});
}

void BatchDesk::Run(WorkerPeer& peer, uint64_t id, uint64_t version) const {
  peer.batch.in_flight = true;
  runner_->Run(
      BatchJob{peer.id, id, peer.worker, version, peer.batch.x, peer.batch.y});
}

}  // namespace pstrain::ps
