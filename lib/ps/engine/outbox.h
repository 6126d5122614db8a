#pragma once
// Outbox: everything the Engine (ps/engine/engine.h) does to the world, as
// calls on one interface, so that the Engine needs no sockets, no timers and no
// clock. The Service (ps/service/service.h) implements it with Asio
// connections; tests implement it with a recording fake
// (tests/testing/fake_outbox.h).
//
// A PeerId names one connection, from Engine::OnAccept to Engine::OnClose;
// ids are never reused. Calls on a peer already closed are ignored.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "wire/frame.h"

namespace pstrain::net {
class SendGate;
}

namespace pstrain::ps {

using PeerId = uint64_t;
/// The engine's notion of time: passed in with every input, never read.
using EngineClock = std::chrono::steady_clock;
using Time = EngineClock::time_point;

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

/// --timeline: one span of the Engine's that ends now. It began at the
/// previous mark on the same `lane` (a worker's rank for what its push
/// brought and its reply sent, kEngine for the Engine's own work); a
/// `what` of nullptr only marks where the lane's next span begins. The
/// Engine has no clock: the Outbox stamps the time. A "reply" mark says
/// that a params reply to `peer` starts: its keys' spans are recorded as
/// their bytes are written.
struct TraceMark {
  static constexpr int kEngine = -1;
  const char* what = nullptr;  // a literal: "push", "update", "reply"
  int lane = kEngine;
  int key = -1;
  int64_t version = -1;
  uint64_t bytes = 0;
  PeerId peer = 0;  // the connection, for a reply
};

class Outbox {
 public:
  virtual ~Outbox() = default;
  /// Queues `frame` for `peer`; frames to one peer leave in order.
  virtual void Send(PeerId peer, const OutFrame& frame) = 0;
  /// The gate of `peer`'s frame being written may have opened further.
  virtual void ResumeWrite(PeerId peer) = 0;
  /// Sends an error frame answering `request_id`, then closes.
  virtual void SendErrorAndClose(PeerId peer, uint64_t request_id,
                                 const Status& status) = 0;
  /// Closes without a word; Engine::OnClose follows with `why`.
  virtual void Close(PeerId peer, const Status& why) = 0;
  /// Asks for Engine::Continue soon, after other pending input: lets the
  /// writes of frames already queued go on between two pieces of work.
  virtual void Post() = 0;
  /// Asks for Engine::OnTimer at `when` (replaces any earlier request).
  virtual void WakeAt(Time when) = 0;
  /// The run is over: stop accepting, and close whatever is left once the
  /// peers had a moment to read their last replies.
  virtual void Shutdown() = 0;
  /// A line for the event log (report::EventLog::Info).
  virtual void Info(const std::string& line) = 0;
  /// Whether Trace records anything (--timeline). Default: no.
  virtual bool tracing() const { return false; }
  /// Records `mark` (TraceMark); called only while tracing().
  virtual void Trace(const TraceMark& mark) { (void)mark; }
};

}  // namespace pstrain::ps
