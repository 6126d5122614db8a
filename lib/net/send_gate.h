#pragma once
// SendGate: lets a frame leave while its data is still being produced. The
// producer opens the gate mark by mark (a worker: mark i once the i-th
// gradient that backward computes is final), and each data buffer of a gated
// frame (FrameBuffers::AddData) names the mark it needs: it is written as
// soon as the gate has reached it. So the first gradients are on the wire
// while the later ones are computed: the overlap of communication with
// backward of Li et al., "PyTorch Distributed: Experiences on Accelerating
// Data Parallel Training", VLDB 2020, section 3.2.3. A mark may also open
// alone, ahead of the ones before it (Open), for a tagged frame whose
// groups go in whatever order their data is ready (FrameBuffers::AddTag).
// Thread-safe: the producer opens from its thread, connections read from
// theirs.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace pstrain::net {

class SendGate {
 public:
  /// Every mark: buffers that need it go out at once.
  static constexpr uint32_t kAll = UINT32_MAX;

  /// Marks 1..marks may be opened one by one (Open); any mark by OpenTo.
  explicit SendGate(uint32_t marks = 0) { SetMarks(marks); }
  /// As the constructor's `marks`, all closed. REQUIRES: no write waits on
  /// the gate and no other thread uses it.
  void SetMarks(uint32_t marks);

  /// Closes the gate for the next frame: only mark 0 is open. Call before
  /// the frame is sent, while no gated write is under way.
  void Reset();
  /// Opens marks 0..mark (a lower mark than already open does nothing) and
  /// wakes every watcher.
  void OpenTo(uint32_t mark);
  /// Opens mark `mark` alone (1..marks; others do nothing) and wakes every
  /// watcher.
  void Open(uint32_t mark);
  /// The data of this frame will never all come (the producer failed):
  /// gated writes that wait end with an error. Wakes every watcher.
  void Abort();

  /// The highest mark of the open prefix: every mark up to it is open.
  uint32_t open() const { return open_.load(); }
  /// Whether buffers that need `mark` may go.
  bool is_open(uint32_t mark) const {
    return mark <= open_.load() || (mark <= marks_ && one_[mark - 1].load());
  }
  bool aborted() const { return aborted_.load(); }

  /// Calls `wake` on the producer's thread each time the gate opens further
  /// or aborts; it must only hand the news to its own thread (asio::post).
  /// Returns an id for Unwatch. Not on the hot path: once per connection.
  int Watch(std::function<void()> wake);
  /// No call to that watcher starts after this returns.
  void Unwatch(int id);

 private:
  void WakeAll();

  // Sequentially consistent, so that a watcher whose wake-up was already
  // pending still reads the newest mark when it runs.
  std::atomic<uint32_t> open_{0};
  std::atomic<bool> aborted_{false};
  uint32_t marks_ = 0;
  std::unique_ptr<std::atomic<bool>[]> one_;  // by mark - 1: Open
  std::mutex mu_;                             // guards watchers_
  std::vector<std::pair<int, std::function<void()>>> watchers_;
  int next_id_ = 0;
};

}  // namespace pstrain::net
