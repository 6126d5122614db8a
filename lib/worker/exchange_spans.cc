#include "worker/exchange_spans.h"

#include <algorithm>

namespace pstrain::worker {

ExchangeSpans::ExchangeSpans(trace::Timeline* timeline,
                             const std::vector<int64_t>* ready,
                             std::string track)
    : timeline_(timeline), ready_(ready), track_(std::move(track)) {}

void ExchangeSpans::Name() {
  if (named_)
    return;
  timeline_->NameThread(track_);
  named_ = true;
}

void ExchangeSpans::StartPush(int64_t version,
                              const std::vector<uint32_t>* order,
                              const std::vector<int>* keys) {
  Name();
  push_version_ = version;
  order_ = order;
  keys_ = keys;
  last_write_ = trace::Timeline::Now();
}

// Buffer i > 0 of a push is attached tensor (*order_)[i - 1] while i is
// within the dense keys (sparse rows follow them); in a tagged push, group
// g is tensor (*order_)[g].
void ExchangeSpans::OnWritten(const net::FrameBuffers& frame, size_t begin,
                              size_t end) {
  const int64_t now = trace::Timeline::Now();
  const auto& buffers = frame.buffers();
  if (order_ != nullptr && frame.tagged()) {
    for (size_t g = 0; g < frame.groups() && g < order_->size(); ++g) {
      if (frame.group_begin(g) < begin || frame.group_begin(g) >= end)
        continue;
      uint64_t bytes = 0;
      for (size_t i = frame.group_begin(g) + 1; i < frame.group_end(g); ++i)
        bytes += buffers[i].size();
      RecordPush((*order_)[g], bytes, now);
    }
  }
  for (size_t i = std::max<size_t>(begin, 1);
       order_ != nullptr && !frame.tagged() && i < end && i <= order_->size();
       ++i) {
    RecordPush((*order_)[i - 1], buffers[i].size(), now);
  }
  last_write_ = now;
}

// A tensor's span starts when the write before it ended, or when backward
// released it, if later.
void ExchangeSpans::RecordPush(uint32_t tensor, uint64_t bytes, int64_t now) {
  const int key = tensor < keys_->size() ? (*keys_)[tensor] : -1;
  int64_t start = last_write_;
  if (key >= 0 && static_cast<size_t>(key) < ready_->size())
    start = std::max(start, (*ready_)[key]);
  timeline_->Record({"push", key, push_version_, step_, bytes},
                    std::min(start, now), now);
}

void ExchangeSpans::OnWindow(const net::FrameBuffers&, bool waiting) {
  const int64_t now = trace::Timeline::Now();
  if (waiting) {
    window_since_ = now;
    return;
  }
  timeline_->Record({"send window", -1, push_version_, step_, 0}, window_since_,
                    now);
}

void ExchangeSpans::StartReply(int64_t version) {
  Name();
  reply_version_ = version;
  last_arrival_ = trace::Timeline::Now();
}

void ExchangeSpans::OnSlice(int key, uint64_t bytes) {
  const int64_t now = trace::Timeline::Now();
  timeline_->Record({"pull", key, reply_version_, step_, bytes}, last_arrival_,
                    now);
  last_arrival_ = now;
}

}  // namespace pstrain::worker
