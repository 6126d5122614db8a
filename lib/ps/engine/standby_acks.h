#pragma once
// StandbyAcks: which version of this server's shard its standbys hold
// (--replicas; ps/rank/standby.h). A standby asks its primary for snapshots one
// after another (wire::Snapshot with the standby flag), each for the
// version after the one it has loaded, so a request is also the
// acknowledgement of the version before it. The primary answers workers
// with no version that a standby does not hold yet: a version a worker
// has seen survives the primary's death (Li et al., OSDI 2014, section
// 4.3: the primary answers only once its replicas have the update).
//
// Threading: not thread-safe; the Engine's thread only.

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "ps/engine/engine_clock.h"

namespace pstrain::ps {

class StandbyAcks {
 public:
  /// Standby `peer` asked for the first version >= `min_version`: it holds
  /// min_version - 1 (a request for 0 or 1: the version it started from,
  /// which every process makes alike from the seed or the checkpoint).
  void Asked(PeerId peer, uint64_t min_version);
  /// Version `version` is this server's at `now`: a standby that holds an
  /// older one is behind from now on, unless it was already.
  void Behind(uint64_t version, Time now);
  /// Appends to `*late` the standbys behind for longer than `seconds` at
  /// `now`: they have asked for nothing since a version they lack was
  /// made, while replies to workers wait for them.
  void Late(Time now, double seconds, std::vector<PeerId>* late) const;
  /// `peer` closed. Returns whether it was a standby; from now on it is
  /// not waited for.
  bool Drop(PeerId peer);
  /// How many standbys are connected.
  int count() const { return static_cast<int>(held_.size()); }
  /// The highest version every standby holds; the largest uint64_t when
  /// there is none (nothing is waited for).
  uint64_t held() const;
  /// A copy of `bytes` bytes was sent to a standby.
  void Sent(uint64_t bytes) { bytes_sent_ += bytes; }
  /// Bytes of copies sent to standbys so far.
  uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  struct Held {
    PeerId peer;
    uint64_t version;
    std::optional<Time> behind_since;  // none while it holds the latest
  };
  std::vector<Held> held_;  // by standby
  uint64_t bytes_sent_ = 0;
};

}  // namespace pstrain::ps
