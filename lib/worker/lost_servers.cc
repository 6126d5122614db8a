#include "worker/lost_servers.h"

#include <algorithm>
#include <thread>

#include "worker/ps_client.h"

namespace pstrain::worker {

std::vector<int> LostServers(
    const std::vector<std::unique_ptr<PsClient>>& clients, const Status& why) {
  bool gone = why.code() == StatusCode::kUnavailable;
  for (const auto& c : clients)
    gone = gone || c->lost();
  std::vector<int> lost;
  for (size_t s = 0; s < clients.size(); ++s) {
    PsClient& c = *clients[s];
    if (gone && s > 0 && c.connected() && !c.refused())
      (void)c.GetJob();  // what it finds of the connection is all we need
    if (c.lost())
      lost.push_back(static_cast<int>(s));
  }
  return lost;
}

Status JoinUntil(int s, const std::function<Status()>& join,
                 std::chrono::steady_clock::time_point deadline,
                 const std::string& seconds,
                 std::chrono::milliseconds* backoff) {
  for (;;) {
    Status joined = join();
    if (joined.ok())
      return joined;
    if (joined.code() != StatusCode::kUnavailable &&
        joined.code() != StatusCode::kTimeout) {
      return joined;
    }
    if (std::chrono::steady_clock::now() + *backoff > deadline) {
      return Unavailable("rank " + std::to_string(s) +
                         " did not come back within " + seconds +
                         " s (--reconnect_timeout): " + joined.message());
    }
    std::this_thread::sleep_for(*backoff);
    *backoff = std::min(2 * *backoff, std::chrono::milliseconds(5000));
  }
}

}  // namespace pstrain::worker
