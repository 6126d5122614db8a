#include "worker/ps_client.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "net/auth.h"
#include "net/shm_handover.h"
#include "net/transport.h"
#include "ps/job/module_fetch.h"
#include "ps/job/tensor_codec.h"
#include "worker/exchange_spans.h"
#include "worker/param_arrivals.h"

namespace pstrain::worker {

PsClient::PsClient(std::chrono::milliseconds timeout,
                   net::ConnectionOptions options, int server_rank)
    : timeout_(2 * timeout),
      connect_timeout_(timeout),
      server_rank_(server_rank),
      client_(options) {}

bool PsClient::Heartbeat(std::string_view progress) {
  std::unique_lock<std::mutex> lock(call_mu_, std::try_to_lock);
  if (!lock.owns_lock())
    return false;
  // A failed write shows again, with its reason, in the next call.
  (void)client_.WriteNow(heartbeat_.Encode(progress));
  NoteBytes();
  return true;
}

Status PsClient::Connect(const std::string& host, int port) {
  return Connect(host, port, connect_timeout_);
}

Status PsClient::Connect(const std::string& host, int port,
                         std::chrono::milliseconds timeout) {
  PS_RETURN_IF_ERROR(client_.Connect(host, port, timeout));
  if (auth_token_.empty())
    return Status::Ok();
  return net::Authenticate(&client_, auth_token_, timeout_);
}

Result<std::string> PsClient::UseTransport(const std::string& transport) {
  const std::string to = "to rank " + std::to_string(server_rank_) + ": ";
  if (transport == net::TransportName(net::Transport::kTcp))
    return to + "TCP (--transport tcp)";
  Status s;
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    s = net::OfferShm(&client_, timeout_);
  }
  if (s.ok())
    return to + "shared memory";
  if (s.code() != StatusCode::kUnavailable || !client_.connected())
    return s;
  return to + "TCP (no shared memory: " + s.message() + ")";
}

Status PsClient::Expect(wire::MsgType got, wire::MsgType want) const {
  if (got == want)
    return Status::Ok();
  return Corruption(std::string("server answered ") + wire::MsgTypeName(got) +
                    ", expected " + wire::MsgTypeName(want));
}

Status PsClient::Call(net::FrameBuffers& request, net::ReplySink* sink,
                      wire::MsgType want) {
  std::lock_guard<std::mutex> lock(call_mu_);
  wire::MsgType got;
  Status s = client_.Call(request, sink, timeout_, &got);
  NoteBytes();
  if (!s.ok() && !client_.error_from_peer()) {
    // Our own wait failed (not an error the server sent): say whom we waited
    // on.
    return s.WithContext("waiting for rank " + std::to_string(server_rank_) +
                         " (server) to answer " +
                         wire::MsgTypeName(request.type()));
  }
  PS_RETURN_IF_ERROR(s);
  return Expect(got, want);
}

Result<ps::JobSpec> PsClient::Handshake(int rank, int world_size,
                                        wire::Role role) {
  wire::Hello hello{role, static_cast<uint32_t>(rank),
                    static_cast<uint32_t>(world_size)};
  wire::EncodeMeta(hello, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kHello, 0, meta_);
  PS_RETURN_IF_ERROR(Call(req, nullptr, wire::MsgType::kHello));
  PS_ASSIGN_OR_RETURN(ps::JobSpec spec, GetJob());
  const std::string from =
      "the job spec from rank " + std::to_string(server_rank_);
  if (spec.world_size != world_size) {
    return InvalidArgument(
        from + ": world_size " + std::to_string(spec.world_size) +
        ", expected this process's " + std::to_string(world_size));
  }
  if (role != wire::Role::kWorker)
    return spec;
  if (rank < spec.num_servers) {
    return InvalidArgument(
        from + ": num_servers " + std::to_string(spec.num_servers) +
        " makes this worker's rank " + std::to_string(rank) + " a server");
  }
  // A worker reaches servers 1..S-1 at these addresses.
  if (spec.num_servers > 1 &&
      spec.server_addrs.size() != static_cast<size_t>(spec.num_servers)) {
    return InvalidArgument(
        from + ": " + std::to_string(spec.server_addrs.size()) +
        " server addresses, expected " + std::to_string(spec.num_servers));
  }
  return spec;
}

Result<ps::JobSpec> PsClient::GetJob() {
  wire::EncodeMeta(wire::GetJob{}, &meta_);
  net::FrameBuffers& get = client_.NewRequest();
  get.Reset(wire::MsgType::kGetJob, 0, meta_);
  PS_RETURN_IF_ERROR(Call(get, nullptr, wire::MsgType::kJobSpec));
  wire::JobSpecMsg msg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(client_.reply_meta(), &msg));
  return ps::JobSpecFromPeer(msg.json, "rank " + std::to_string(server_rank_));
}

Result<std::shared_ptr<const std::string>> PsClient::FetchModule(
    const std::string& sha256) {
  return ps::FetchModule(&client_, timeout_, sha256);
}

Status PsClient::Register(const std::vector<wire::KeySpec>& keys) {
  wire::Register reg{keys};
  wire::EncodeMeta(reg, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kRegister, 0, meta_);
  return Call(req, nullptr, wire::MsgType::kAck);
}

void PsClient::Attach(std::vector<at::Tensor> params,
                      std::vector<at::Tensor> grads) {
  params_ = std::move(params);
  push_.Attach(std::move(grads));
}

void PsClient::SetSendGate(net::SendGate* gate, std::vector<uint32_t> marks) {
  client_.WatchGate(gate);
  push_.SetGate(gate, std::move(marks));
}

void PsClient::SetArrivals(ParamArrivals* arrivals,
                           std::vector<int> slice_keys) {
  arrivals_ = arrivals;
  slice_keys_ = std::move(slice_keys);
}

void PsClient::SetSparse(std::vector<SparseSlot>* slots) {
  sparse_ = slots;
  push_.SetSparse(slots);
}

void PsClient::SetCompressor(PushCompressor* compressor) {
  push_.SetCompressor(compressor);
}

void PsClient::OnPiece(size_t index) {
  if (index >= reply_.pieces())
    return;
  reply_.Land(index, params_, sparse_);
  const int key = reply_.key(index);
  if (key >= static_cast<int>(slice_keys_.size()))
    return;
  if (spans_ != nullptr)
    spans_->OnSlice(slice_keys_[key], params_[key].nbytes());
  if (arrivals_ != nullptr)
    arrivals_->OnSlice(slice_keys_[key]);
}

Status PsClient::FinishReply() {
  return reply_.Finish(!piecewise(), params_, sparse_);
}

Status PsClient::OnMeta(const wire::FrameHeader& header, std::string_view meta,
                        uint64_t, std::vector<asio::mutable_buffer>* dst) {
  PS_RETURN_IF_ERROR(Expect(header.type, wire::MsgType::kParams));
  PS_RETURN_IF_ERROR(reply_.Decode(meta));
  const wire::Params& reply = reply_.meta();
  if (spans_ != nullptr)
    spans_->StartReply(static_cast<int64_t>(reply.version));
  PS_RETURN_IF_ERROR(reply_.Plan(params_, sparse_, dst));
  if (arrivals_ != nullptr) {
    arrivals_->OnMeta();
    // Rows of no bytes have no buffer, so no piece: they are in already.
    for (const wire::SparseRows& r : reply.rows) {
      if (r.rows.nbytes == 0 && r.rows.key < slice_keys_.size())
        arrivals_->OnSlice(slice_keys_[r.rows.key]);
    }
  }
  return Status::Ok();
}

Result<uint64_t> PsClient::Pull(uint64_t min_version) {
  wire::EncodeMeta(wire::Pull{min_version}, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kPull, 0, meta_);
  PS_RETURN_IF_ERROR(Call(req, this, wire::MsgType::kParams));
  PS_RETURN_IF_ERROR(FinishReply());
  return reply_.meta().version;
}

Result<uint64_t> PsClient::PushPull(uint64_t version) {
  client_.SetRound(version);
  wire::EncodeMeta(push_.PushPullMeta(version), &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kPushPull, 0, meta_);
  push_.AddData(req);
  if (spans_ != nullptr) {
    spans_->StartPush(static_cast<int64_t>(version), &push_.order(),
                      &slice_keys_);
    req.SetWriteObserver(spans_);
  }
  PS_RETURN_IF_ERROR(Call(req, this, wire::MsgType::kParams));
  PS_RETURN_IF_ERROR(FinishReply());
  return reply_.meta().version;
}

Status PsClient::Push(uint64_t version) {
  client_.SetRound(version);
  wire::EncodeMeta(push_.PushMeta(version), &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kPush, 0, meta_);
  push_.AddData(req);
  return Call(req, nullptr, wire::MsgType::kAck);
}

Result<double> PsClient::PushBatch(uint64_t version, const at::Tensor& x,
                                   const at::Tensor& y) {
  wire::PushBatch msg;
  msg.version = version;
  msg.x = ps::DescribeTensor(0, x);
  msg.y = ps::DescribeTensor(1, y);
  wire::EncodeMeta(msg, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kPushBatch, 0, meta_);
  req.AddData(x.data_ptr(), x.nbytes());
  req.AddData(y.data_ptr(), y.nbytes());
  PS_RETURN_IF_ERROR(Call(req, nullptr, wire::MsgType::kBatchDone));
  wire::BatchDone done;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(client_.reply_meta(), &done));
  reply_.TakeBatchDone(done.version, done.stop);
  return done.loss;
}

Status PsClient::Done(const report::WorkerStats& stats) {
  wire::EncodeMeta(wire::Done{report::ToJson(stats).dump()}, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kDone, 0, meta_);
  Status s = Call(req, nullptr, wire::MsgType::kAck);
  client_.Close();
  return s;
}

}  // namespace pstrain::worker
