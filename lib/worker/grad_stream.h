#pragma once
// GradStream: lets each gradient leave as soon as backward has made it
// final, while the rest of backward runs. A post hook on every parameter's
// gradient accumulator (the mechanism of PyTorch's DistributedDataParallel:
// Li et al., "PyTorch Distributed", VLDB 2020, section 3.2.3) marks its key
// ready. The SendGate opens over the longest ready prefix of the expected
// order, which is the one the previous step showed (at first reverse key
// order, backward's for a feed-forward model), and at the key's own mark,
// for a tagged push that sends each key as soon as it is ready
// (worker/ps_client.h's SetPriority). Keys that come out of order only
// wait longer: what is sent never changes. On the CPU the gradients are
// sent from where backward put them (no copy); on a GPU (SetCopies) the
// hook starts the key's copy to the host, and the key is ready once its
// bytes are there.
// Begin/End/Abort run on the thread that calls backward; the hooks on the
// thread that runs it (the same one on the CPU, autograd's device thread
// on a GPU); OnCopied on DeviceCopies' thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "net/send_gate.h"

namespace torch::autograd {
struct Node;
}

namespace pstrain::worker {

class DeviceCopies;

class GradStream {
 public:
  /// `params`: the model's keys in key order (models/model_state.h): a
  /// parameter is ready when its gradient is, a buffer (requires no grad) at
  /// Begin, forward having written it. With `hook` false the gate opens
  /// only at End.
  GradStream(const std::vector<at::Tensor>& params, bool hook);
  ~GradStream();
  GradStream(const GradStream&) = delete;
  GradStream& operator=(const GradStream&) = delete;

  net::SendGate* gate() { return &gate_; }
  /// Calls `prepare(key)` once per key and step, when the key is final and
  /// before the gate lets it go (a parameter: in its hook, on backward's
  /// thread; the rest at Begin or End), so that it may code the key's
  /// gradient for sending (worker/push_compressor.h). Empty: none.
  void SetPrepare(std::function<void(int)> prepare) {
    prepare_ = std::move(prepare);
  }
  /// A model on a GPU: each key is copied to the host by `copies` when it
  /// is final, and ready once copied (its owner calls OnCopied then).
  /// Null: the CPU. `copies` must outlive the stream's use.
  void SetCopies(DeviceCopies* copies) { copies_ = copies; }
  /// DeviceCopies reports key `key` on the host.
  void OnCopied(int key) { OnReady(key); }
  /// --timeline: from now on ready_times() says when each key was
  /// released. Call before the first Begin.
  void KeepReadyTimes() { ready_times_.assign(ready_.size(), 0); }
  /// By key: when it was last released (trace::Timeline::Now
  /// microseconds); empty unless KeepReadyTimes.
  const std::vector<int64_t>& ready_times() const { return ready_times_; }
  /// Key k's mark (1 + its place in the expected order), by key.
  const std::vector<uint32_t>& marks() const { return marks_; }

  /// Before backward: closes the gate.
  void Begin();
  /// After backward: every gradient is on the host (a no-op on the CPU).
  void Drain();
  /// After backward: opens the gate fully, once every copy to the host is
  /// done.
  /// Returns true when this step's order differed from the expected one;
  /// marks() then holds the new order, for the next step.
  bool End();
  /// Backward failed: what waits on the gate is never sent.
  void Abort() { gate_.Abort(); }

 private:
  void OnReady(int key);
  void Final(int key);

  net::SendGate gate_;
  DeviceCopies* copies_ = nullptr;
  std::function<void(int)> prepare_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hooks_;      // one per accumulators_ entry
  std::vector<int> buffer_keys_;      // keys that are buffers
  std::vector<int> order_;            // keys, expected order
  std::vector<uint32_t> marks_;       // by key
  std::vector<int> seen_;             // keys, this step's order
  std::vector<bool> ready_;           // by key, this step
  std::vector<int64_t> ready_times_;  // by key, --timeline
  size_t prefix_ = 0;                 // order_[0, prefix_) ready
};

}  // namespace pstrain::worker
