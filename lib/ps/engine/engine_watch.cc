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

// OnFrame noted the time. Only a registered worker's progress counts.
Status Engine::OnHeartbeat(Peer& peer, std::string_view meta) {
  WorkerPeer* worker = Registered(peer);
  return worker ? progress_.Heartbeat(worker->rank, meta) : Status::Ok();
}

void Engine::Tick(Time now) {
  now_ = now;
  peers_.Sweep();
  if (stopping_)
    return;
  watch_.Tick(now_, &peers_);
  CheckSilentWorkers();
  CheckLostServers();
  if (stopping_)
    return;
  if (watch_.TimedOut(now_)) {
    return Fail(Timeout("timed out after " + WholeSeconds(options_.timeout) +
                        " s waiting for " + Waiting()));
  }
  CheckHandshakes();
}

// A peer that never finishes its handshake is dropped.
void Engine::CheckHandshakes() {
  std::vector<PeerId> late;
  watch_.LateHandshakes(peers_, now_, &late);
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
    for (int w = 0; w < members_.num_workers(); ++w) {
      if (members_.in_quorum(w) && rule_->awaits_push(w) && !members_.done(w))
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
