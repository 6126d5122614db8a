#pragma once
// The kernel's watch over a TCP peer's host (ConnectionOptions::dead_after,
// the job's --dead_after): a host that goes silent without a FIN (its link
// down, its power off) sends no close, and an idle connection to it would
// wait for ever. The kernel probes the peer once the connection is idle
// and aborts it when dead_after seconds of probes go unanswered; the
// connection then ends with an error, as one to a crashed process does.
// A live host's kernel answers the probes however busy, or stopped, the
// process is: a stopped process is found by the silence of its frames
// (net::Client's watch, the servers' heartbeats), not here.
//
// No TCP_USER_TIMEOUT: since Linux 5.11 it also aborts a connection whose
// peer keeps its receive window shut for that long, although its host
// acknowledges every probe, and a live peer that does not read for a while
// (a standby loading a large copy, a busy engine thread) is not dead.

namespace pstrain::net {

/// The socket options on TCP socket `fd` (SO_KEEPALIVE; TCP_KEEPIDLE and
/// TCP_KEEPINTVL 1 s; TCP_KEEPCNT from `dead_after`): probes every second
/// once idle, aborted after `dead_after` seconds (> 0) of unanswered
/// probes. Errors are ignored (a socket that is not TCP keeps its
/// defaults).
void WatchPeerHost(int fd, double dead_after);

}  // namespace pstrain::net
