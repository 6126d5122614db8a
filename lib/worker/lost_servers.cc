#include "worker/lost_servers.h"

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

}  // namespace pstrain::worker
