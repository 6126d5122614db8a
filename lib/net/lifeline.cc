#include "net/lifeline.h"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

namespace pstrain::net {

void WatchLifeline(asio::ip::tcp::socket* socket,
                   std::function<void(LifelineEnd)> on_end) {
  socket->async_wait(
      asio::ip::tcp::socket::wait_read,
      [socket, on_end = std::move(on_end)](const std::error_code& ec) mutable {
        if (ec == asio::error::operation_aborted || !socket->is_open())
          return;
        char byte;
        const ssize_t n =
            ::recv(socket->native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !ec)
          return WatchLifeline(socket, std::move(on_end));  // spurious
        on_end(n > 0 ? LifelineEnd::kBytes : LifelineEnd::kClosed);
      });
}

}  // namespace pstrain::net
