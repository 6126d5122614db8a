#include "ps/rank/master_client.h"

#include "net/auth.h"
#include "ps/job/module_fetch.h"
#include "ps/job/tensor_codec.h"
#include "wire/messages.h"

namespace pstrain::ps {

MasterClient::MasterClient(std::chrono::milliseconds timeout,
                           net::ConnectionOptions options,
                           std::string auth_token)
    : timeout_(timeout), auth_token_(std::move(auth_token)), client_(options) {}

Status MasterClient::Connect(const std::string& host, int port) {
  PS_RETURN_IF_ERROR(client_.Connect(host, port, timeout_));
  if (auth_token_.empty())
    return Status::Ok();
  return net::Authenticate(&client_, auth_token_, timeout_);
}

Status MasterClient::Call(net::FrameBuffers& request, wire::MsgType want) {
  wire::MsgType got;
  Status s = client_.Call(request, nullptr, timeout_, &got);
  if (!s.ok() && !client_.error_from_peer()) {
    return s.WithContext(std::string("waiting for rank 0 (master) to answer ") +
                         wire::MsgTypeName(request.type()));
  }
  PS_RETURN_IF_ERROR(s);
  if (got == want)
    return Status::Ok();
  return Corruption(std::string("rank 0 answered ") + wire::MsgTypeName(got) +
                    ", expected " + wire::MsgTypeName(want));
}

Result<JobSpec> MasterClient::Handshake(int rank, int world_size,
                                        wire::Role role) {
  return Hello(wire::Hello{role, static_cast<uint32_t>(rank),
                           static_cast<uint32_t>(world_size)});
}

Result<JobSpec> MasterClient::Claim(int shard, int world_size, int claimant,
                                    std::optional<uint64_t> version) {
  return Hello(wire::Hello{wire::Role::kServer, static_cast<uint32_t>(shard),
                           static_cast<uint32_t>(world_size),
                           version ? wire::Claim::kCopy : wire::Claim::kNoCopy,
                           static_cast<uint32_t>(claimant),
                           version.value_or(0)});
}

Result<JobSpec> MasterClient::Hello(const wire::Hello& said) {
  wire::EncodeMeta(said, &meta_);
  net::FrameBuffers& hello = client_.NewRequest();
  hello.Reset(wire::MsgType::kHello, 0, meta_);
  PS_RETURN_IF_ERROR(Call(hello, wire::MsgType::kHello));
  wire::EncodeMeta(wire::GetJob{}, &meta_);
  net::FrameBuffers& get = client_.NewRequest();
  get.Reset(wire::MsgType::kGetJob, 0, meta_);
  PS_RETURN_IF_ERROR(Call(get, wire::MsgType::kJobSpec));
  wire::JobSpecMsg msg;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(client_.reply_meta(), &msg));
  return JobSpecFromPeer(msg.json, "rank 0");
}

Result<std::shared_ptr<const std::string>> MasterClient::FetchModule(
    const std::string& sha256) {
  return ps::FetchModule(&client_, timeout_, sha256);
}

Status MasterClient::AnnounceServer(const std::string& address) {
  wire::EncodeMeta(wire::ServerInfo{address}, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kServerInfo, 0, meta_);
  return Call(req, wire::MsgType::kAck);
}

Status MasterClient::Rejoin(const std::string& host, int port, int rank,
                            int world_size, const std::string& address) {
  client_.Close();
  PS_RETURN_IF_ERROR(Connect(host, port));
  PS_RETURN_IF_ERROR(Handshake(rank, world_size).status());
  return AnnounceServer(address);
}

Status MasterClient::Beat() {
  if (beat_.empty()) {
    std::string meta;
    wire::EncodeMeta(wire::Heartbeat{}, &meta);
    wire::EncodeFramePrefix(wire::MsgType::kHeartbeat, 0, meta, 0, &beat_);
  }
  PS_RETURN_IF_ERROR(client_.Poll());
  Status wrote = client_.WriteNow(beat_);
  if (wrote.ok())
    return wrote;
  Status said = client_.Poll();  // rank 0's line, when it left one
  return said.ok() ? wrote : said;
}

Status MasterClient::SendShard(uint64_t version,
                               const std::vector<at::Tensor>& slices,
                               const std::string& optimizer_state) {
  wire::Shard shard;
  shard.version = version;
  for (size_t k = 0; k < slices.size(); ++k) {
    shard.params.push_back(DescribeTensor(static_cast<uint32_t>(k), slices[k]));
  }
  shard.params.push_back(DescribeBytes(static_cast<uint32_t>(slices.size()),
                                       optimizer_state.size()));
  wire::EncodeMeta(shard, &meta_);
  net::FrameBuffers& req = client_.NewRequest();
  req.Reset(wire::MsgType::kShard, 0, meta_);
  for (const auto& t : slices)
    req.AddData(t.data_ptr(), t.nbytes());
  req.AddData(optimizer_state.data(), optimizer_state.size());
  Status s = Call(req, wire::MsgType::kAck);
  client_.Close();
  return s;
}

}  // namespace pstrain::ps
