#pragma once
// ProgressFeed: a registered worker's running progress, as its heartbeats
// carry it (a JSON object's text), handed to the server's own code
// (launch's progress rows, the dashboard) unparsed: the receiver parses it
// and ignores what it cannot read. Decoding reuses one message, so a
// heartbeat allocates only when its json outgrows the last one.
// Not thread-safe; the Engine's thread only.

#include <functional>
#include <string_view>

#include "util/status.h"
#include "wire/messages.h"

namespace pstrain::ps {

class ProgressFeed {
 public:
  using Receiver = std::function<void(int rank, std::string_view json)>;

  /// Where progress goes; none (the default): heartbeats are not decoded.
  void set_receiver(Receiver receiver) { receiver_ = std::move(receiver); }
  /// A heartbeat's meta (checked by wire::ValidateFrame) from registered
  /// worker `rank`: its progress, if it carries any, goes to the receiver,
  /// `json` living only for the call. Errors: the meta's decoding's.
  Status Heartbeat(int rank, std::string_view meta);

 private:
  Receiver receiver_;
  wire::Heartbeat heartbeat_;  // reused: its json keeps its capacity
};

}  // namespace pstrain::ps
