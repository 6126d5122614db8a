#include "ps/service/server_spans.h"

#include <algorithm>
#include <string>

namespace pstrain::ps {

ServerSpans::ServerSpans(trace::Timeline* timeline, const StepOrder* order)
    : timeline_(timeline), order_(order), updated_(order->keys().size(), 0) {}

ServerSpans::Lane& ServerSpans::LaneOf(int lane) {
  auto [it, added] = lanes_.try_emplace(lane);
  if (added && lane == TraceMark::kEngine) {
    timeline_->NameThread("io");
    it->second.tid = trace::Timeline::ThisThread();
  } else if (added) {
    it->second.tid = timeline_->Track("from rank " + std::to_string(lane));
  }
  return it->second;
}

void ServerSpans::Mark(const TraceMark& mark) {
  const int64_t now = trace::Timeline::Now();
  if (mark.what != nullptr && std::string_view(mark.what) == "reply") {
    auto [it, added] = replies_.try_emplace(mark.peer);
    if (added) {
      auto [tid, fresh] = reply_tids_.try_emplace(mark.lane);
      if (fresh)
        tid->second = timeline_->Track("to rank " + std::to_string(mark.lane));
      it->second = std::make_unique<ReplyWrites>(this, tid->second);
    }
    it->second->Start(mark.version, now);
    return;
  }
  Lane& lane = LaneOf(mark.lane);
  if (mark.what != nullptr) {
    timeline_->Record(
        {mark.what, mark.key, mark.version, mark.version, mark.bytes},
        lane.start, now, lane.tid);
    if (mark.key >= 0 && static_cast<size_t>(mark.key) < updated_.size() &&
        mark.lane == TraceMark::kEngine) {
      updated_[mark.key] = now;
    }
  }
  lane.start = now;
}

net::WriteObserver* ServerSpans::Replies(PeerId peer) {
  auto it = replies_.find(peer);
  return it == replies_.end() ? nullptr : it->second.get();
}

// A params frame's buffer i > 0 is the key at place mark(i) - 1 of the
// step's order (Engine::SendParams).
void ServerSpans::ReplyWrites::OnWritten(const net::FrameBuffers& frame,
                                         size_t begin, size_t end) {
  const int64_t now = trace::Timeline::Now();
  const auto& buffers = frame.buffers();
  for (size_t i = std::max<size_t>(begin, 1); i < end; ++i) {
    const int place = static_cast<int>(frame.mark(i)) - 1;
    const std::vector<int>& keys = owner_->order_->keys();
    if (place < 0 || static_cast<size_t>(place) >= keys.size())
      continue;
    const int key = keys[place];
    const int64_t start = std::max(last_, owner_->updated_[key]);
    owner_->timeline_->Record(
        {"pull", key, version_, version_, buffers[i].size()}, start, now, tid_);
  }
  last_ = now;
}

}  // namespace pstrain::ps
