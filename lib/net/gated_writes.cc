#include "net/gated_writes.h"

#include "net/frame_buffers.h"
#include "net/send_gate.h"

namespace pstrain::net {

void GatedWrites::Start(const FrameBuffers& frame) {
  tagged_ = frame.tagged();
  buffers_ = frame.buffers().size();
  next_ = 0;
  taken_.assign(frame.groups(), false);
  groups_left_ = frame.groups();
}

GatedWrites::Range GatedWrites::Next(const FrameBuffers& frame) {
  if (frame.gate() == nullptr)
    return {next_, buffers_};  // all at once, the groups as added
  const SendGate& gate = *frame.gate();
  if (!tagged_) {
    size_t end = next_;
    while (end < buffers_ && gate.is_open(frame.mark(end)))
      ++end;
    return {next_, end};
  }
  if (next_ == 0)
    return {0, 1};
  for (size_t g = 0; g < taken_.size(); ++g) {
    if (taken_[g])
      continue;
    bool open = true;
    for (size_t i = frame.group_begin(g); open && i < frame.group_end(g); ++i)
      open = gate.is_open(frame.mark(i));
    if (open) {
      taken_[g] = true;
      return {frame.group_begin(g), frame.group_end(g)};
    }
  }
  return {};
}

void GatedWrites::Wrote(Range range) {
  if (!tagged_ || (range.begin == 0 && range.end == buffers_))
    next_ = range.end;  // in order, or an ungated frame whole
  else if (range.begin == 0)
    next_ = 1;
  else
    --groups_left_;
}

}  // namespace pstrain::net
