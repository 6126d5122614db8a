#include "ps/engine/standby_acks.h"

#include <algorithm>

namespace pstrain::ps {

void StandbyAcks::Asked(PeerId peer, uint64_t min_version) {
  const uint64_t holds = min_version > 0 ? min_version - 1 : 0;
  for (auto& [id, version] : held_) {
    if (id == peer) {
      version = std::max(version, holds);  // a standby's versions only grow
      return;
    }
  }
  held_.emplace_back(peer, holds);
}

bool StandbyAcks::Drop(PeerId peer) {
  const auto it =
      std::find_if(held_.begin(), held_.end(),
                   [peer](const auto& entry) { return entry.first == peer; });
  if (it == held_.end())
    return false;
  held_.erase(it);
  return true;
}

uint64_t StandbyAcks::held() const {
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (const auto& [id, version] : held_)
    least = std::min(least, version);
  return least;
}

}  // namespace pstrain::ps
