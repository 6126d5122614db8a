#pragma once
// WritePace: over TCP, when a tagged frame's next group may be chosen:
// once its host's link order allows (net/link_turn.h: a reply to another
// host waits while a push of its host is underway), then once the kernel
// has sent all but the send window of what was written. One per
// connection; runs on the thread of the connection's io_context.

#include <cstdint>
#include <utility>

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include "net/link_turn.h"

namespace pstrain::net {

class WritePace {
 public:
  explicit WritePace(asio::ip::tcp::socket& socket)
      : socket_(socket), timer_(socket.get_executor()) {}

  /// TCP_NOTSENT_LOWAT of `bytes` (Connection::SetSendWindow); setting the
  /// window it has costs no system call.
  void SetSendWindow(uint64_t bytes);
  LinkTurn& turn() { return turn_; }

  /// Whether the next group must wait: then `ready(ec)` runs once it may
  /// be chosen (or with the error that ended the wait); otherwise it may
  /// be chosen now and `ready` never runs.
  template <typename Ready>
  bool Wait(Ready ready) {
    if (turn_.Hold(LinkTurn::Clock::now())) {
      timer_.expires_after(LinkTurn::kPoll);
      timer_.async_wait([this, ready](const std::error_code& ec) mutable {
        if (ec || !Wait(ready))
          ready(ec);
      });
      return true;
    }
    if (!window_)
      return false;
    socket_.async_wait(asio::ip::tcp::socket::wait_write, std::move(ready));
    return true;
  }

 private:
  asio::ip::tcp::socket& socket_;
  asio::steady_timer timer_;  // a held group's next look at the link
  LinkTurn turn_;
  bool window_ = false;
  uint64_t window_bytes_ = 0;
};

}  // namespace pstrain::net
