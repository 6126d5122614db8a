#include "ps/engine/standby_acks.h"

#include <algorithm>
#include <chrono>

namespace pstrain::ps {

void StandbyAcks::Asked(PeerId peer, uint64_t min_version) {
  const uint64_t holds = min_version > 0 ? min_version - 1 : 0;
  for (Held& h : held_) {
    if (h.peer == peer) {
      h.version = std::max(h.version, holds);  // its versions only grow
      h.behind_since.reset();  // it answered; Behind says if it lags still
      return;
    }
  }
  held_.push_back({peer, holds, std::nullopt});
}

void StandbyAcks::Behind(uint64_t version, Time now) {
  for (Held& h : held_) {
    if (h.version < version && !h.behind_since)
      h.behind_since = now;
  }
}

void StandbyAcks::Late(Time now, double seconds,
                       std::vector<PeerId>* late) const {
  for (const Held& h : held_) {
    if (h.behind_since &&
        std::chrono::duration<double>(now - *h.behind_since).count() >
            seconds) {
      late->push_back(h.peer);
    }
  }
}

bool StandbyAcks::Drop(PeerId peer) {
  const auto it =
      std::find_if(held_.begin(), held_.end(),
                   [peer](const Held& h) { return h.peer == peer; });
  if (it == held_.end())
    return false;
  held_.erase(it);
  return true;
}

uint64_t StandbyAcks::held() const {
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (const Held& h : held_)
    least = std::min(least, h.version);
  return least;
}

}  // namespace pstrain::ps
