#pragma once
// DeviceCopies: a GPU worker's keys between the model and the host tensors
// the wire reads and writes (worker/host_mirror.h: pinned memory there).
// Each gradient leaves the GPU on a copy stream of its own as soon as
// backward has made it final (the copy waits, on the GPU, for the kernels
// that made it, while backward goes on issuing the next ones), and a
// thread of its own reports each key once its bytes are on the host, so
// the push sends it while the rest of backward runs: DistributedDataParallel
// overlaps its buckets' communication with backward the same way (Li et
// al., "PyTorch Distributed", VLDB 2020, section 3.2.3). Parameters go up
// on the compute stream as they arrive, ordered before the kernels that
// read them. Every tensor, event and stream is made once: nothing is
// allocated per step.
//
// Device-generic (c10::Event, c10::Stream): it compiles against a libtorch
// without CUDA, where nothing constructs it.
// Threads: CopyOut on the thread that runs the key's backward (autograd's
// device thread), CopyIn, CopyOutNow and WaitAll on the training thread;
// `copied` runs on the copy thread.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

namespace pstrain::worker {

class DeviceCopies {
 public:
  /// `model`: the model's keys (models/model_state.h order) on one GPU;
  /// `host_params` and `host_grads`: CPU tensors of the same shapes and
  /// dtypes, pinned. A parameter key's gradient is copied out, a buffer
  /// key's values. `copied(key)` is called once key's bytes are in
  /// host_grads[key].
  DeviceCopies(std::vector<at::Tensor> model, std::vector<bool> is_buffer,
               std::vector<at::Tensor> host_params,
               std::vector<at::Tensor> host_grads,
               std::function<void(int)> copied);
  /// Waits for the copies in flight, then stops the copy thread.
  ~DeviceCopies();
  DeviceCopies(const DeviceCopies&) = delete;
  DeviceCopies& operator=(const DeviceCopies&) = delete;

  /// Starts copying key `key` out, after what the calling thread's current
  /// stream has queued so far (the kernels that made it), and returns.
  void CopyOut(int key);
  /// Copies key `key` out and waits for it, without calling `copied`.
  void CopyOutNow(int key);
  /// Until every CopyOut so far has been reported to `copied`.
  void WaitAll();
  /// Starts copying host_params[key] into the model on the current stream,
  /// before whatever is queued on it next, and returns.
  void CopyIn(int key);

 private:
  void Loop();

  const std::vector<at::Tensor> model_;
  const std::vector<bool> is_buffer_;
  const std::vector<at::Tensor> host_params_, host_grads_;
  const std::function<void(int)> copied_;
  const c10::Device device_;
  const c10::Stream copy_stream_;
  std::vector<std::unique_ptr<c10::Event>> made_;  // by key, compute stream

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> queue_;  // keys copying, in order; capacity: every key
  size_t next_ = 0;         // queue_[next_] is the next to report
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pstrain::worker
