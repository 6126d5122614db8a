#include "ps/engine/write_fence.h"

#include <algorithm>

#include "util/check.h"

namespace pstrain::ps {

bool WriteFence::Holds(const Work& work) {
  if (in_flight_ == 0 || own_replies_)
    return false;
  waiting_.push_back(work);
  return true;
}

void WriteFence::Sent(PeerId peer) {
  ++per_peer_[peer];
  ++in_flight_;
}

bool WriteFence::Written(PeerId peer) {
  auto it = per_peer_.find(peer);
  if (it == per_peer_.end() || it->second == 0)
    return false;
  --it->second;
  return --in_flight_ == 0 && !waiting_.empty();
}

bool WriteFence::Closed(PeerId peer) {
  auto it = per_peer_.find(peer);
  if (it != per_peer_.end()) {
    in_flight_ -= it->second;
    per_peer_.erase(it);
  }
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [peer](const Work& w) {
                                  return w.kind == Work::Kind::kPush &&
                                         w.peer == peer;
                                }),
                 waiting_.end());
  return in_flight_ == 0 && !waiting_.empty();
}

bool WriteFence::removing(int w) const {
  return std::any_of(waiting_.begin(), waiting_.end(), [w](const Work& work) {
    return work.kind == Work::Kind::kRemoveWorker && work.worker == w;
  });
}

const std::vector<WriteFence::Work>& WriteFence::TakeWaiting() {
  PS_CHECK(in_flight_ == 0) << "work taken while params are on the wire";
  taken_.clear();
  taken_.swap(waiting_);
  return taken_;
}

}  // namespace pstrain::ps
