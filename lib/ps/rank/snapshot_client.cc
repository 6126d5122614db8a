#include "ps/rank/snapshot_client.h"

#include "net/address.h"
#include "net/auth.h"
#include "ps/job/tensor_codec.h"
#include "ps/store/snapshot.h"
#include "wire/messages.h"

namespace pstrain::ps {

SnapshotClient::SnapshotClient(int server_rank, int world_size,
                               std::chrono::milliseconds timeout,
                               net::ConnectionOptions options,
                               std::string auth_token)
    : server_rank_(server_rank),
      world_size_(world_size),
      timeout_(timeout),
      connect_timeout_(timeout),
      auth_token_(std::move(auth_token)),
      client_(options) {}

Status SnapshotClient::Connect(const std::string& address) {
  std::string host;
  int port = 0;
  PS_RETURN_IF_ERROR(net::SplitAddress(address, &host, &port));
  PS_RETURN_IF_ERROR(client_.Connect(host, port, connect_timeout_));
  if (!auth_token_.empty()) {
    PS_RETURN_IF_ERROR(net::Authenticate(&client_, auth_token_, timeout_));
  }
  wire::EncodeMeta(
      wire::Hello{wire::Role::kTool, 0, static_cast<uint32_t>(world_size_)},
      &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kHello, 0, meta_);
  wire::MsgType got;
  PS_RETURN_IF_ERROR(client_.Call(req, nullptr, timeout_, &got));
  if (got != wire::MsgType::kHello) {
    return Corruption("rank " + std::to_string(server_rank_) +
                      " answered hello with " + wire::MsgTypeName(got));
  }
  return Status::Ok();
}

Result<uint64_t> SnapshotClient::Fetch(uint64_t min_version,
                                       const std::vector<at::Tensor>& slices,
                                       std::string* optimizer_state,
                                       std::vector<int64_t>* applied) {
  PS_RETURN_IF_ERROR(Ask(min_version, slices, optimizer_state, applied));
  return Answer();
}

Status SnapshotClient::Ask(uint64_t min_version,
                           const std::vector<at::Tensor>& slices,
                           std::string* optimizer_state,
                           std::vector<int64_t>* applied, bool replay) {
  slices_ = &slices;
  optimizer_state_ = optimizer_state;
  applied_ = applied;
  const bool standby = applied != nullptr;
  replay_ = standby && replay;
  wire::EncodeMeta(
      wire::Snapshot{min_version, optimizer_state != nullptr, standby, replay_},
      &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kSnapshot, 0, meta_);
  return client_.Start(req, this);
}

Result<uint64_t> SnapshotClient::Answer() {
  wire::MsgType got;
  Status s = client_.Await(2 * timeout_, &got);
  slices_ = nullptr;
  optimizer_state_ = nullptr;
  applied_ = nullptr;
  replay_ = false;
  if (!s.ok() && !client_.error_from_peer()) {
    return s.WithContext("waiting for rank " + std::to_string(server_rank_) +
                         " (server) to answer snapshot");
  }
  PS_RETURN_IF_ERROR(s);
  return version_;
}

Status SnapshotClient::OnMeta(const wire::FrameHeader& header,
                              std::string_view meta, uint64_t,
                              std::vector<asio::mutable_buffer>* dst) {
  step_record_ = replay_ && header.type == wire::MsgType::kStepRecord;
  if (header.type != wire::MsgType::kShard && !step_record_) {
    return Corruption(std::string("server answered ") +
                      wire::MsgTypeName(header.type) + ", expected shard" +
                      (replay_ ? " or step_record" : ""));
  }
  wire::Shard shard;
  if (step_record_) {
    wire::StepRecord record;
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &record));
    shard = {record.version, std::move(record.params)};
  } else {
    PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &shard));
  }
  const char* what = step_record_ ? "step_record" : "shard";
  const size_t n = slices_->size();
  const bool state = optimizer_state_ && !step_record_;
  const size_t want = n + (state || step_record_ ? 1 : 0) + (applied_ ? 1 : 0);
  if (shard.params.size() != want) {
    return Corruption(std::string(what) + " carries " +
                      std::to_string(shard.params.size()) +
                      " tensors, expected " + std::to_string(want));
  }
  for (size_t k = 0; k < n; ++k) {
    PS_RETURN_IF_ERROR(
        CheckDescMatches(shard.params[k], k, (*slices_)[k], what));
    dst->emplace_back((*slices_)[k].data_ptr(), (*slices_)[k].nbytes());
  }
  if (step_record_) {
    const wire::TensorDesc& d = shard.params[n];
    PS_RETURN_IF_ERROR(CheckBytesDesc(d, static_cast<uint32_t>(n), what));
    if (d.nbytes != sizeof(double)) {
      return Corruption("step_record: lr of " + std::to_string(d.nbytes) +
                        " bytes, expected 8");
    }
    dst->emplace_back(&step_lr_, sizeof(double));
  } else if (optimizer_state_) {
    PS_RETURN_IF_ERROR(
        CheckBytesDesc(shard.params[n], static_cast<uint32_t>(n), "shard"));
    optimizer_state_->resize(shard.params[n].nbytes);
    dst->emplace_back(optimizer_state_->data(), optimizer_state_->size());
  }
  if (applied_) {
    const wire::TensorDesc& d = shard.params.back();
    const uint32_t index = static_cast<uint32_t>(shard.params.size() - 1);
    PS_RETURN_IF_ERROR(CheckBytesDesc(d, index, what));
    if (d.nbytes % sizeof(int64_t) != 0) {
      return Corruption(std::string(what) + ": applied pushes of " +
                        std::to_string(d.nbytes) +
                        " bytes, not a whole number of int64");
    }
    applied_->resize(d.nbytes / sizeof(int64_t));
    dst->emplace_back(applied_->data(), d.nbytes);
  }
  version_ = shard.version;
  return Status::Ok();
}

}  // namespace pstrain::ps
