#pragma once
// ParamArrivals: lets the next forward start while the parameters of the
// last push-pull are still arriving. Each server's reply brings its slices
// in key order; forward waits (models::Model::Await) only for the keys of
// the layer it is about to use, so the first layers compute while the bytes
// of the later ones travel: the layer-ordered parameter propagation of P3
// (Jayarajan et al., "Priority-based Parameter Propagation for Distributed
// DNN Training", SysML 2019, section 3), with key order as the priority.
// Thread-safe: exchange threads report arrivals, the training thread waits.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace pstrain::trace {
class Timeline;
}  // namespace pstrain::trace

namespace pstrain::worker {

class ParamArrivals {
 public:
  /// `slices_per_key[k]`: how many slices, over all `num_servers` servers'
  /// replies, make up key k (1 each with one server).
  ParamArrivals(std::vector<int> slices_per_key, int num_servers);

  /// Before an exchange starts: nothing of its replies is in.
  void Begin();
  /// A server's reply meta is in (its version and members are known).
  void OnMeta();
  /// One slice of key `key` is in.
  void OnSlice(int key);
  /// The exchange has ended, well or not: no wait blocks from now on.
  void OpenAll();

  /// Until every server's reply meta is in (true), or OpenAll (false
  /// unless all were in).
  bool WaitMeta();
  /// Until keys [0, n) are all in, or OpenAll.
  void WaitKeys(size_t n);
  /// Seconds spent blocked in WaitMeta and WaitKeys since the last call.
  double TakeWaitedSeconds();
  /// Threads blocked in WaitMeta or WaitKeys now.
  int waiting() const;
  /// --timeline: each wait that blocks is a span ("wait version", "wait
  /// params" with its last key). `timeline` must outlive this object.
  void set_timeline(trace::Timeline* timeline) { timeline_ = timeline; }

 private:
  template <typename Pred>
  bool WaitUntil(Pred ready, const char* what, int key);

  const std::vector<int> slices_per_key_;
  const int num_servers_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> missing_;  // slices per key not yet in
  size_t prefix_ = 0;         // keys [0, prefix_) are in
  int metas_ = 0;
  bool all_ = false;
  int waiting_ = 0;
  std::chrono::steady_clock::duration waited_{};
  trace::Timeline* timeline_ = nullptr;
};

}  // namespace pstrain::worker
