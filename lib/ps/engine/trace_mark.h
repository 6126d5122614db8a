#pragma once
// A mark on the Engine's --timeline (Outbox::Trace).

#include <cstdint>

#include "ps/engine/engine_clock.h"

namespace pstrain::ps {

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

}  // namespace pstrain::ps
