#pragma once
// A frame the Engine sends (Outbox::Send), and the spans of bytes it
// borrows and reads into.

#include <cstdint>
#include <string_view>
#include <vector>

#include "wire/frame.h"

namespace pstrain::net {
class SendGate;
}

namespace pstrain::ps {

/// Bytes borrowed from their owner; `mark` is the SendGate mark they need.
struct DataSpan {
  const void* data;
  uint64_t bytes;
  uint32_t mark = 0;
};
/// Where incoming data bytes are to land (Engine::OnMeta).
struct MutableSpan {
  void* data;
  uint64_t bytes;
};
/// One frame to send. `meta` and the spans are read during Send only for
/// the meta (copied); the data bytes stay borrowed until the peer's
/// Engine::OnWritten for this frame.
struct OutFrame {
  wire::MsgType type = wire::MsgType::kAck;
  uint64_t request_id = 0;
  std::string_view meta;
  std::vector<DataSpan> data;
  /// Non-null: the data waits on this gate's marks (net/send_gate.h).
  net::SendGate* gate = nullptr;
  /// Each span is a descriptor's bytes, sent after its tag as soon as its
  /// mark opens, whatever the order (wire::kFrameTagged).
  bool tagged = false;
  /// With after_pushes_below: the bytes a tagged frame keeps unsent in
  /// the kernel at most over TCP (net::Connection::SetSendWindow).
  uint64_t send_window = 0;
  /// Over TCP, each span waits while a worker of this host has a push to
  /// another host underway of gradients computed on a version below this
  /// one (net/link_turn.h): pushes first on the link, but a reply that
  /// ends a round before a push of the next. 0: no wait.
  uint64_t after_pushes_below = 0;
};

}  // namespace pstrain::ps
