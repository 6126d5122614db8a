#include "worker/heartbeat_frame.h"

namespace pstrain::worker {

const std::string& HeartbeatFrame::Encode(std::string_view progress) {
  // assign and the encoders reuse the buffers' capacity.
  msg_.json.assign(progress);
  wire::EncodeMeta(msg_, &meta_);
  wire::EncodeFramePrefix(wire::MsgType::kHeartbeat, 0, meta_, 0, &frame_);
  return frame_;
}

}  // namespace pstrain::worker
