#include "ps/service/await_beats.h"

#include <algorithm>

namespace pstrain::ps {

std::chrono::nanoseconds AwaitBeats::IntervalFor(double dead_after) {
  return std::min<std::chrono::nanoseconds>(
      std::chrono::seconds(1),
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(dead_after / 4)));
}

AwaitBeats::AwaitBeats(double dead_after) {
  if (dead_after > 0)
    interval_ = IntervalFor(dead_after);
}

void AwaitBeats::In(PeerId peer, wire::MsgType type, Time now) {
  if (on() && type != wire::MsgType::kHeartbeat)
    turns_[peer].asked = now;
}

void AwaitBeats::Out(PeerId peer, Time now) {
  if (!on())
    return;
  auto it = turns_.find(peer);
  if (it != turns_.end())
    it->second.answered = now;
}

void AwaitBeats::Due(Time now, std::vector<PeerId>* due) {
  for (auto& [peer, turn] : turns_) {
    if (turn.asked > turn.answered &&
        now - std::max(turn.asked, turn.beat) >= interval_) {
      turn.beat = now;
      due->push_back(peer);
    }
  }
}

}  // namespace pstrain::ps
