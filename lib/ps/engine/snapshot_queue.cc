#include "ps/engine/snapshot_queue.h"

#include <algorithm>

namespace pstrain::ps {

void SnapshotQueue::Add(uint64_t min_version, bool with_optimizer_state,
                        Done done, bool replay) {
  requests_.push_back(
      {min_version, with_optimizer_state, std::move(done), replay});
}

SnapshotQueue::Due SnapshotQueue::TakeDue(uint64_t version) {
  Due due;
  auto it = std::stable_partition(
      requests_.begin(), requests_.end(),
      [version](const Request& r) { return r.min_version > version; });
  for (auto d = it; d != requests_.end(); ++d) {
    due.with_optimizer_state =
        due.with_optimizer_state || d->with_optimizer_state;
    due.requests.push_back(std::move(*d));
  }
  requests_.erase(it, requests_.end());
  return due;
}

std::vector<SnapshotQueue::Request> SnapshotQueue::TakeAll() {
  std::vector<Request> all;
  all.swap(requests_);
  return all;
}

}  // namespace pstrain::ps
