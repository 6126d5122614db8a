#pragma once
// WriteFence: the one owner of the rule "no step while parameters are on
// the wire". Params frames are written straight from the parameters'
// storage (zero copy), so nothing may change them until the last such frame
// has left: every step, and everything that may close one (a push, a lost
// or finished worker leaving the quorum, a --step_timeout), asks the fence
// first. While writes are under way the fence keeps the work, in order, and
// hands it back once they have ended.
// Not thread-safe: the Engine's thread only. Allocates only when a peer
// sends its first params frame or more work waits than ever before.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ps/engine/engine_clock.h"

namespace pstrain::ps {

/// Work that may step, kept while parameters are on the wire.
struct FenceWork {
  enum class Kind { kRemoveWorker, kCloseStep, kPush };
  Kind kind;
  int worker = -1;       // kRemoveWorker
  uint64_t version = 0;  // kCloseStep: the step it closes
  PeerId peer = 0;       // kPush: who pushed, and the request to answer
  uint64_t request_id = 0;
};

class WriteFence {
 public:
  using Work = FenceWork;

  /// Whether `work` must wait: params frames are being written. Then it is
  /// kept, and TakeWaiting returns it once they have all left.
  bool Holds(const Work& work);
  /// A params frame to `peer` is on its way.
  void Sent(PeerId peer);
  /// One of `peer`'s params frames has left. Returns whether that was the
  /// last one anywhere and work waits.
  bool Written(PeerId peer);
  /// `peer` is gone: its frames will never be written, and its pushes are
  /// dropped. Returns whether nothing is on the wire now and work waits.
  bool Closed(PeerId peer);
  /// No params frame on its way.
  bool open() const { return in_flight_ == 0; }
  /// While on, the frames on their way are the replies of the step under
  /// way, updated ahead of its close (ps/rules/step_order.h): each key's bytes
  /// wait until the key is stepped, and no key changes again in this step,
  /// so the step's own work (its pushes, a lost worker leaving it) need
  /// not wait for them. Holds holds nothing then.
  void set_own_replies(bool on) { own_replies_ = on; }
  /// `peer`'s params frames on their way.
  int in_flight(PeerId peer) const {
    auto it = per_peer_.find(peer);
    return it == per_peer_.end() ? 0 : it->second;
  }
  /// Whether removing worker `w` from the quorum waits (the StepDriver asks
  /// before the rank may rejoin).
  bool removing(int w) const;
  /// The work kept, in the order it came; the fence keeps none. Valid
  /// until the next TakeWaiting; work held meanwhile waits apart. Allocates
  /// nothing once the two lists have grown. REQUIRES: open().
  const std::vector<Work>& TakeWaiting();

 private:
  int in_flight_ = 0;
  bool own_replies_ = false;
  std::unordered_map<PeerId, int> per_peer_;
  std::vector<Work> waiting_;
  std::vector<Work> taken_;  // TakeWaiting's, kept to reuse
};

}  // namespace pstrain::ps
