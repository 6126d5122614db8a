#pragma once
// Which servers a worker joins again after an exchange failed: those whose
// connection is lost, found out for sure. A connection is read only during
// a call on it, so a server that died after it answered this exchange still
// looks connected: for example the server whose loss made rank 0 end the
// run (kUnavailable) before rank 0 answered us. Judged by what was read,
// none would be joined again then (rank 0 sent an error: not lost), or rank
// 0 alone, and the pull from every server would fail on the dead one.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace pstrain::worker {

class PsClient;

/// The ranks, ascending, of the servers in `clients` (by server rank) whose
/// connection is lost after an exchange failed with `why`. Once one is
/// lost, or `why` is kUnavailable (what rank 0 says when a server died),
/// each server s > 0 that looks connected and did not itself refuse the
/// call is asked for the job: a live one answers, a dead one's connection
/// ends the call. Rank 0 is not asked: joining it again asks it anyway.
/// Blocks for at most one call per server. Not thread-safe: the caller
/// holds every client.
std::vector<int> LostServers(
    const std::vector<std::unique_ptr<PsClient>>& clients, const Status& why);

/// Joins lost server `s` again with `join`, retrying the failures that
/// may pass (kUnavailable, kTimeout) after `*backoff`, which doubles up to
/// 5 s and carries over to the next server, until `deadline`; then
/// kUnavailable naming `s` and --reconnect_timeout's `seconds`. Other
/// errors at once.
Status JoinUntil(int s, const std::function<Status()>& join,
                 std::chrono::steady_clock::time_point deadline,
                 const std::string& seconds,
                 std::chrono::milliseconds* backoff);

}  // namespace pstrain::worker
