// The job's own requests (get_job, get_module), and rank 0's part in a job
// with several servers, whose state the ServerRoster keeps
// (ps/engine/server_roster.h).

#include <nlohmann/json.hpp>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"
#include "ps/job/tensor_codec.h"

namespace pstrain::ps {

void Engine::ExpectServers(const ShardPlan* plan,
                           std::vector<at::Tensor> model_params) {
  roster_.Expect(plan, spec_.num_servers, std::move(model_params));
}

// Workers wait for the servers' addresses; servers themselves only need
// the job.
Status Engine::OnGetJob(Peer& peer, uint64_t id) {
  if (!AsServer(peer) && !roster_.all_announced()) {
    peer.job_pending = true;
    peer.job_id = id;
    return Status::Ok();
  }
  ReplyJob(peer, id);
  return Status::Ok();
}

void Engine::ReplyJob(Peer& peer, uint64_t id) {
  JobSpec spec = spec_;
  if (roster_.expecting())
    spec.server_addrs = roster_.addresses();
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
  out_.tagged = false;
  out_.send_window = 0;
  out_.after_pushes_below = 0;
  outbox_->Send(peer.id, out_);
  return Status::Ok();
}

Status Engine::OnServerInfo(Peer& from, uint64_t id, std::string_view meta) {
  ServerPeer* server = AsServer(from);
  if (!server)
    return InvalidArgument("server_info from a worker");
  ServerPeer& peer = *server;
  if (!roster_.address(peer.server()).empty())
    return InvalidArgument("second server_info");
  wire::ServerInfo info;
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &info));
  const bool took_over = roster_.lost(peer.server());
  PS_RETURN_IF_ERROR(roster_.Announce(peer.server(), info.address));
  if (took_over) {
    outbox_->Info("rank " + std::to_string(peer.rank) +
                  "'s shard was taken over by its standby (--replicas " +
                  std::to_string(spec_.replicas) + ")");
  }
  watch_.Progress(now_);
  outbox_->Info("rank " + std::to_string(peer.rank) + " (server) listens at " +
                info.address);
  peer.meta.clear();
  Reply(peer, wire::MsgType::kAck, id);
  if (!roster_.all_announced())
    return Status::Ok();
  for (auto& [c, p] : peers_) {
    if (!p->job_pending)
      continue;
    p->job_pending = false;
    ReplyJob(*p, p->job_id);
  }
  return Status::Ok();
}

Status Engine::PlanShard(Peer& from, std::string_view meta, ReadPlan* plan) {
  ServerPeer* server = AsServer(from);
  if (!server)
    return InvalidArgument("shard from a worker");
  return roster_.PlanShard(*server, meta, &plan->buffers);
}

// Only a server's shard gets here: PlanShard refused the others.
Status Engine::OnShard(Peer& from, uint64_t id) {
  ServerPeer* server = AsServer(from);
  if (!server)
    return InvalidArgument("shard from a worker");
  ServerPeer& peer = *server;
  roster_.ShardIn(peer);
  watch_.Progress(now_);
  peer.meta.clear();
  Reply(peer, wire::MsgType::kAck, id);
  MaybeFinish();
  return Status::Ok();
}

// Server s died before its final shard: its standbys (on ranks
// s+1..s+R-1) claim it once the connection of s is gone, which only this
// rank can see, and the highest copy wins (engine_claims.cc), so no two
// ranks serve one shard (OnHello refuses a second connection of a rank).
// Workers asking where s listens wait for the winner's address (OnGetJob).
void Engine::LoseServer(ServerPeer& peer, const Status& why) {
  const int s = peer.server();
  roster_.Lose(s, now_);
  watch_.Progress(now_);
  std::string standbys;
  for (int i = 1; i < spec_.replicas; ++i) {
    standbys +=
        (i > 1 ? ", " : "") + std::to_string((s + i) % spec_.num_servers);
  }
  outbox_->Info(
      "lost rank " + std::to_string(s) + " (server)" +
      (why.ok() ? "" : " (" + why.message() + ")") + "; waiting up to " +
      std::to_string(TakeoverWait().count() / 1000) +
      " s for its standby (rank " + standbys + ") to take its shard over");
}

void Engine::CheckLostServers() {
  const int s = roster_.LostBefore(now_ - TakeoverWait());
  if (s < 0)
    return;
  if (claims_.Waiting(s))
    return DecideClaims(s, /*at_deadline=*/true);
  Fail(ShardLost(s));
}

// Twice --dead_after: a standby notices at once when its primary is killed,
// and within --dead_after when its host goes silent.
std::chrono::milliseconds Engine::TakeoverWait() const {
  if (spec_.dead_after <= 0)
    return options_.timeout;
  return std::chrono::milliseconds(
      static_cast<int64_t>(2000 * spec_.dead_after));
}

}  // namespace pstrain::ps
