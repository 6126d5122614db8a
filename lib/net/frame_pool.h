#pragma once
// FramePool: a connection's outgoing frames, kept for reuse so that a
// steady exchange allocates none. A frame's address stays put from Take to
// Give (it waits in the write queue by pointer). Not thread-safe.

#include <cstddef>
#include <deque>
#include <vector>

#include "net/frame_buffers.h"

namespace pstrain::net {

class FramePool {
 public:
  /// A frame no one holds: the last one given back, else a new one.
  FrameBuffers& Take() {
    if (free_.empty())
      return pool_.emplace_back();
    FrameBuffers* f = free_.back();
    free_.pop_back();
    return *f;
  }
  /// `frame` (from Take) is written or dropped: it may be taken again.
  void Give(FrameBuffers* frame) { free_.push_back(frame); }
  /// Frames made so far.
  size_t size() const { return pool_.size(); }

 private:
  std::deque<FrameBuffers> pool_;  // a deque: addresses stay put
  std::vector<FrameBuffers*> free_;
};

}  // namespace pstrain::net
