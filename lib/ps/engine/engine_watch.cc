// The Engine's watch over time: silent workers, handshakes that never end,
// a job that makes no progress, and the time the server itself was busy.

#include <sstream>

#include "ps/engine/engine.h"
#include "ps/engine/peer.h"

namespace pstrain::ps {

namespace {

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream s;
  s << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i)
    s << (i ? ", " : "") << ranks[i];
  return s.str();
}

std::string WholeSeconds(std::chrono::milliseconds d) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

// OnFrame noted the time. A registered worker's progress goes to
// on_progress_, unread; the meta was checked (wire::ValidateFrame), and
// decoding into heartbeat_ allocates only when a json outgrows it.
Status Engine::OnHeartbeat(Peer& peer, std::string_view meta) {
  WorkerPeer* worker = Registered(peer);
  if (!worker || !on_progress_)
    return Status::Ok();
  PS_RETURN_IF_ERROR(wire::DecodeMeta(meta, &heartbeat_));
  if (!heartbeat_.json.empty())
    on_progress_(worker->rank, heartbeat_.json);
  return Status::Ok();
}

void Engine::Tick(Time now) {
  now_ = now;
  peers_.Sweep();
  if (stopping_)
    return;
  CreditStall();
  CheckSilentWorkers();
  CheckLostServers();
  if (stopping_)
    return;
  if (now_ - last_progress_ > options_.timeout) {
    return Fail(Timeout("timed out after " + WholeSeconds(options_.timeout) +
                        " s waiting for " + Waiting()));
  }
  CheckHandshakes();
}

// A tick later than it should be means this thread was busy with something
// of its own (or the process was held up), and the frames that came in
// meanwhile are still unread: that time is nobody's silence.
void Engine::CreditStall() {
  if (last_tick_ != Time{} && now_ - last_tick_ > 2 * kTick) {
    const auto late = now_ - last_tick_ - kTick;
    for (auto& [id, peer] : peers_) {
      peer->last_heard += late;
      peer->accepted_at += late;
    }
    last_progress_ += late;
  }
  last_tick_ = now_;
}

// A peer that never finishes its handshake holds a connection (and memory)
// for nothing: it is dropped.
void Engine::CheckHandshakes() {
  std::vector<PeerId> late;
  for (const auto& [id, peer] : peers_) {
    if (peer->stage == Peer::Stage::kNew && !peer->closing &&
        now_ - peer->accepted_at > options_.timeout) {
      late.push_back(id);
    }
  }
  for (PeerId id : late) {
    peers_.Find(id)->closing = true;
    outbox_->Close(id, Timeout("no handshake within " +
                               WholeSeconds(options_.timeout) + " s"));
  }
}

std::string Engine::Waiting() const {
  std::vector<int> missing = roster_.MissingAddresses();
  for (int w = 0; w < spec_.num_workers(); ++w) {
    if (!members_.peer(w))
      missing.push_back(w + spec_.num_servers);
  }
  if (!missing.empty())
    return RankList(missing) + " to connect";
  if (rule_->has_quorum()) {
    for (int w : server_->MissingPushes()) {
      if (!members_.done(w))
        missing.push_back(w + spec_.num_servers);
    }
    if (!missing.empty()) {
      return RankList(missing) + " to push version " +
             std::to_string(server_->version());
    }
  }
  for (int w = 0; w < spec_.num_workers(); ++w) {
    if (!members_.done(w))
      missing.push_back(w + spec_.num_servers);
  }
  if (!missing.empty())
    return RankList(missing) + " to finish";
  return RankList(roster_.MissingShards()) + " to send its parameters";
}

}  // namespace pstrain::ps
