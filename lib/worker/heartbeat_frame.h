#pragma once
// HeartbeatFrame: the heartbeat frame a PsClient writes from the heartbeat
// thread, kept encoded. A beat comes every second or so for the whole run,
// so its message, meta and frame live in buffers kept from one beat to the
// next: once they have grown to the longest progress seen, a beat
// allocates nothing. Not thread-safe: PsClient encodes under its call
// mutex.

#include <string>
#include <string_view>

#include "wire/messages.h"

namespace pstrain::worker {

class HeartbeatFrame {
 public:
  /// Encodes a heartbeat (request id 0, no data) carrying `progress` as its
  /// wire::Heartbeat::json ("" for none), and returns the whole frame's
  /// bytes: header, meta length, meta. The reference is valid until the
  /// next Encode.
  const std::string& Encode(std::string_view progress);

 private:
  wire::Heartbeat msg_;
  std::string meta_;
  std::string frame_;
};

}  // namespace pstrain::worker
