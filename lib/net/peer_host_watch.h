#pragma once
// The kernel's watch over a TCP peer's host (ConnectionOptions::dead_after,
// the job's --dead_after): a host that goes silent without a FIN (its link
// down, its power off) sends no close, and a connection to it would wait
// for ever. The kernel probes the peer once the connection is idle and
// aborts it when nothing is acknowledged for dead_after seconds, idle or
// not; the connection then ends with an error, as one to a crashed
// process does. A live host's kernel answers the probes however busy, or
// stopped, the process is.

namespace pstrain::net {

/// The socket options on TCP socket `fd` (SO_KEEPALIVE; TCP_KEEPIDLE and
/// TCP_KEEPINTVL 1 s; TCP_KEEPCNT and TCP_USER_TIMEOUT from `dead_after`):
/// probes every second once idle, aborted after `dead_after` seconds (> 0)
/// without an acknowledgement. Errors are ignored (a socket that is not
/// TCP keeps its defaults).
void WatchPeerHost(int fd, double dead_after);

}  // namespace pstrain::net
