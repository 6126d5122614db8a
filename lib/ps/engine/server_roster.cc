#include "ps/engine/server_roster.h"

#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {

void ServerRoster::Expect(const ShardPlan* plan, int num_servers,
                          std::vector<at::Tensor> model_params) {
  plan_ = plan;
  model_params_ = std::move(model_params);
  addresses_.assign(num_servers, "");
  servers_.assign(num_servers, nullptr);
  process_.resize(num_servers);
  for (int s = 0; s < num_servers; ++s)
    process_[s] = s;
  terms_.assign(num_servers, 1);
  optimizer_states_.assign(num_servers, "");
  shard_in_.assign(num_servers, false);
  lost_at_.assign(num_servers, std::nullopt);
}

void ServerRoster::Lose(int s, Time now) {
  if (!addresses_[s].empty()) {
    addresses_[s].clear();
    --announced_;
  }
  lost_at_[s] = now;
}

void ServerRoster::Claimed(int s, int process, Time now) {
  process_[s] = process;
  ++terms_[s];
  lost_at_[s] = now;
}

bool ServerRoster::alive(int process) const {
  if (process == 0)
    return true;
  for (int s = 1; s <= others(); ++s) {
    if (servers_[s] && process_[s] == process)
      return true;
  }
  return false;
}

int ServerRoster::LostBefore(Time deadline) const {
  for (int s = 1; s <= others(); ++s) {
    if (lost_at_[s] && *lost_at_[s] < deadline)
      return s;
  }
  return -1;
}

void ServerRoster::Hello(int s, ServerPeer* peer) {
  servers_[s] = peer;
}

void ServerRoster::Disconnect(int s, const ServerPeer* peer) {
  if (servers_[s] == peer)
    servers_[s] = nullptr;
}

Status ServerRoster::Announce(int s, const std::string& address) {
  if (!addresses_[s].empty())
    return InvalidArgument("second server_info");
  if (address.empty() || address.find(':') == std::string::npos) {
    return InvalidArgument("server_info: address '" + address +
                           "', expected host:port");
  }
  addresses_[s] = address;
  ++announced_;
  lost_at_[s].reset();
  return Status::Ok();
}

std::vector<std::string> ServerRoster::addresses() const {
  std::vector<std::string> all = addresses_;
  all[0] = own_address_;
  return all;
}

// A server's final slices land straight in rank 0's model parameters, and
// its optimizer state (the last tensor) beside them, for the checkpoint
// rank 0 writes.
Status ServerRoster::PlanShard(ServerPeer& peer, std::string_view meta,
                               std::vector<MutableSpan>* buffers) {
  if (peer.shard_in)
    return InvalidArgument("second shard");
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &shard_msg_));
  const std::vector<at::Tensor> views =
      SliceViews(*plan_, peer.server(), model_params_);
  if (shard_msg_.params.size() != views.size() + 1) {
    return Corruption("shard carries " +
                      std::to_string(shard_msg_.params.size()) +
                      " tensors, expected " + std::to_string(views.size() + 1) +
                      " (the slices and the optimizer state)");
  }
  for (size_t k = 0; k < views.size(); ++k) {
    PS_RETURN_IF_ERROR(
        CheckDescMatches(shard_msg_.params[k], k, views[k], "shard"));
    buffers->push_back({views[k].data_ptr(), views[k].nbytes()});
  }
  const wire::TensorDesc& state = shard_msg_.params.back();
  PS_RETURN_IF_ERROR(
      CheckBytesDesc(state, static_cast<uint32_t>(views.size()), "shard"));
  std::string& bytes = optimizer_states_[peer.server()];
  bytes.resize(state.nbytes);
  buffers->push_back({bytes.data(), bytes.size()});
  return Status::Ok();
}

void ServerRoster::ShardIn(ServerPeer& peer) {
  peer.shard_in = true;
  shard_in_[peer.server()] = true;
  ++shards_;
}

std::vector<int> ServerRoster::MissingAddresses() const {
  std::vector<int> missing;
  for (int s = 1; s <= others(); ++s) {
    if (addresses_[s].empty())
      missing.push_back(s);
  }
  return missing;
}

std::vector<int> ServerRoster::MissingShards() const {
  std::vector<int> missing;
  for (int s = 1; s <= others(); ++s) {
    if (!servers_[s] || !servers_[s]->shard_in)
      missing.push_back(s);
  }
  return missing;
}

}  // namespace pstrain::ps
