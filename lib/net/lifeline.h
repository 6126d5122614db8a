#pragma once
// The lifeline: the TCP socket a connection began on, kept open once its
// frames go through shared memory (net/shm_stream.h). Nothing is read from
// it any more, so its becoming readable means the peer closed it (the
// kernel does so for a process that dies, SIGKILL included) or broke the
// protocol by writing to it. Nothing else tells a shared-memory peer's end
// so promptly or so surely.

#include <functional>

#include <asio/ip/tcp.hpp>

namespace pstrain::net {

enum class LifelineEnd {
  kClosed,  // the peer closed its end (or the socket failed)
  kBytes,   // the peer wrote to it: a protocol error
};

/// Waits, on `socket`'s io_context, until `socket` becomes readable and
/// calls `on_end` once with why. Closing or cancelling the socket ends the
/// wait without a call. `socket` must outlive the wait; `on_end` holds what
/// the callback needs alive.
void WatchLifeline(asio::ip::tcp::socket* socket,
                   std::function<void(LifelineEnd)> on_end);

}  // namespace pstrain::net
