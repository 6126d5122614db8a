// Rank 0's part in a job with several servers: it is the one address every
// process knows, so servers 1..S-1 tell it where they listen, workers learn
// the addresses from it with the job spec, and at the end each server sends
// it its slices so that one process holds, scores and saves the whole model.

#include <nlohmann/json.hpp>

#include "ps/engine.h"
#include "ps/engine_peer.h"
#include "ps/tensor_codec.h"

namespace pstrain::ps {

void Engine::ExpectServers(const ShardPlan* plan,
                           std::vector<at::Tensor> model_params) {
  plan_ = plan;
  model_params_ = std::move(model_params);
  server_addrs_.assign(spec_.num_servers, "");
  servers_.assign(spec_.num_servers, nullptr);
  shard_optimizer_states_.assign(spec_.num_servers, "");
}

// Workers wait for the servers' addresses; servers themselves only need
// the job.
Status Engine::OnGetJob(Peer& peer, uint64_t id) {
  if (plan_ && peer.server < 0 && announced_ < spec_.num_servers - 1) {
    peer.job_pending = true;
    peer.job_id = id;
    return Status::Ok();
  }
  ReplyJob(peer, id);
  return Status::Ok();
}

void Engine::ReplyJob(Peer& peer, uint64_t id) {
  JobSpec spec = spec_;
  if (plan_) {
    spec.server_addrs = server_addrs_;
    spec.server_addrs[0] = address_;
  }
  wire::JobSpecMsg msg{ToJson(spec).dump()};
  wire::EncodeMeta(msg, &peer.meta);
  Reply(peer, wire::MsgType::kJobSpec, id);
}

// The job's TorchScript module goes straight from the bytes the spec
// keeps, which live as long as the engine.
Status Engine::OnGetModule(Peer& peer, uint64_t id) {
  if (!spec_.module) {
    return InvalidArgument("get_module: the job trains the built-in model " +
                           spec_.model + ", no module");
  }
  wire::ModuleMsg msg;
  msg.sha256 = spec_.model_sha256;
  msg.bytes = DescribeBytes(0, spec_.module->size());
  wire::EncodeMeta(msg, &peer.meta);
  if (peer.closing)
    return Status::Ok();
  out_.type = wire::MsgType::kModule;
  out_.request_id = id;
  out_.meta = peer.meta;
  out_.data = {DataSpan{spec_.module->data(), spec_.module->size()}};
  out_.gate = nullptr;
  outbox_->Send(peer.id, out_);
  return Status::Ok();
}

Status Engine::OnServerInfo(Peer& peer, uint64_t id, std::string_view meta) {
  if (peer.server <= 0)
    return InvalidArgument("server_info from a worker");
  if (!server_addrs_[peer.server].empty())
    return InvalidArgument("second server_info");
  wire::ServerInfo info;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &info));
  if (info.address.empty() || info.address.find(':') == std::string::npos) {
    return InvalidArgument("server_info: address '" + info.address +
                           "', expected host:port");
  }
  server_addrs_[peer.server] = info.address;
  last_progress_ = now_;
  outbox_->Info("rank " + std::to_string(peer.rank) + " (server) listens at " +
                info.address);
  peer.meta.clear();
  Reply(peer, wire::MsgType::kAck, id);
  if (++announced_ < spec_.num_servers - 1)
    return Status::Ok();
  for (auto& [c, p] : peers_) {
    if (!p->job_pending)
      continue;
    p->job_pending = false;
    ReplyJob(*p, p->job_id);
  }
  return Status::Ok();
}

// A server's final slices land straight in rank 0's model parameters, and
// its optimizer state (the last tensor) beside them, for the checkpoint
// rank 0 writes.
Status Engine::PlanShard(Peer& peer, std::string_view meta, ReadPlan* plan) {
  if (peer.server <= 0)
    return InvalidArgument("shard from a worker");
  if (peer.shard_in)
    return InvalidArgument("second shard");
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &shard_msg_));
  const std::vector<at::Tensor> views =
      SliceViews(*plan_, peer.server, model_params_);
  if (shard_msg_.params.size() != views.size() + 1) {
    return Corruption("shard carries " +
                      std::to_string(shard_msg_.params.size()) +
                      " tensors, expected " + std::to_string(views.size() + 1) +
                      " (the slices and the optimizer state)");
  }
  for (size_t k = 0; k < views.size(); ++k) {
    PS_RETURN_IF_ERROR(
        CheckDescMatches(shard_msg_.params[k], k, views[k], "shard"));
    plan->buffers.push_back({views[k].data_ptr(), views[k].nbytes()});
  }
  const wire::TensorDesc& state = shard_msg_.params.back();
  PS_RETURN_IF_ERROR(
      CheckBytesDesc(state, static_cast<uint32_t>(views.size()), "shard"));
  std::string& bytes = shard_optimizer_states_[peer.server];
  bytes.resize(state.nbytes);
  plan->buffers.push_back({bytes.data(), bytes.size()});
  return Status::Ok();
}

Status Engine::OnShard(Peer& peer, uint64_t id) {
  peer.shard_in = true;
  ++shards_;
  last_progress_ = now_;
  peer.meta.clear();
  Reply(peer, wire::MsgType::kAck, id);
  MaybeFinish();
  return Status::Ok();
}

}  // namespace pstrain::ps
