#pragma once
// Outbox: everything the Engine (ps/engine/engine.h) does to the world, as
// calls on one interface, so that the Engine needs no sockets, no timers and no
// clock. The Service (ps/service/service.h) implements it with Asio
// connections; tests implement it with a recording fake
// (tests/testing/fake_outbox.h).
// Calls on a peer already closed are ignored. What it carries has headers
// of its own: the ids and time (engine_clock.h), a frame (out_frame.h), a
// timeline's mark (trace_mark.h).

#include <cstdint>
#include <string>

#include "ps/engine/engine_clock.h"
#include "ps/engine/out_frame.h"
#include "ps/engine/trace_mark.h"
#include "util/status.h"

namespace pstrain::ps {

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
