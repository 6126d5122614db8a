#pragma once
// GatedWrites: which buffers of a frame a connection writes next: all at
// once, unless it is gated (FrameBuffers::SetGate). Gated, in order: from where
// the last write ended up to the first buffer whose mark is not open yet.
// Tagged (FrameBuffers::AddTag): the prefix, then one group at a time, each
// time the first in frame order whose marks are all open, so that a group that
// becomes ready overtakes every later one, however long ready (P3:
// Jayarajan et al., "Priority-based Parameter Propagation for Distributed
// DNN Training", SysML 2019, section 3). No I/O. Not thread-safe; one per
// connection, reused frame after frame.

#include <cstddef>
#include <vector>

namespace pstrain::net {

class FrameBuffers;

class GatedWrites {
 public:
  /// Buffers [begin, end) of the frame's list (FrameBuffers::buffers()).
  struct Range {
    size_t begin = 0;
    size_t end = 0;
    bool empty() const { return begin == end; }
  };

  /// A new frame, its list built (FrameBuffers::Finish). `frame` must stay
  /// the same until done().
  void Start(const FrameBuffers& frame);
  /// The buffers to write next, or an empty range while none is open. Each
  /// non-empty range must be written (Wrote) before the next call.
  Range Next(const FrameBuffers& frame);
  /// The range Next returned has been written.
  void Wrote(Range range);
  /// Every buffer is written.
  bool done() const {
    return next_ == buffers_ || (tagged_ && next_ > 0 && groups_left_ == 0);
  }
  /// The next range is one of a tagged frame's groups, not its prefix:
  /// the one choice a send window may wait for.
  bool at_group() const { return tagged_ && next_ > 0; }

 private:
  bool tagged_ = false;
  size_t buffers_ = 0;
  size_t next_ = 0;  // in order: the first buffer not written; tagged: 1
                     // once the prefix is
  std::vector<bool> taken_;  // tagged: by group, handed out by Next
  size_t groups_left_ = 0;   // tagged: groups not yet written
};

}  // namespace pstrain::net
