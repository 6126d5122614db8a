#include "net/peer_host_watch.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>

namespace pstrain::net {

void WatchPeerHost(int fd, double dead_after) {
  const int on = 1;
  const int second = 1;
  const int probes = std::max(1, static_cast<int>(std::ceil(dead_after)));
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &second, sizeof(second));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &second, sizeof(second));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

}  // namespace pstrain::net
