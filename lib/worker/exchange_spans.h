#pragma once
// ExchangeSpans: a worker's --timeline spans (trace/timeline.h) of its
// exchange with one server, on that exchange's thread. Each key's push
// runs from when its bytes could start (backward released its gradient,
// GradStream, and the bytes before it were written) to when the write that
// carried its last byte ended (net::WriteObserver); each key's pull, from
// the arrival of the reply's meta or the slice before it to the arrival of
// its own slice.
// Threading: set_step on the training thread between exchanges; the rest
// on the exchange's thread. `*timeline` and `*ready` must outlive it.

#include <cstdint>
#include <string>
#include <vector>

#include "net/frame_buffers.h"
#include "trace/timeline.h"

namespace pstrain::worker {

class ExchangeSpans : public net::WriteObserver {
 public:
  /// `ready`: by model key, when its gradient was released (Timeline::Now
  /// microseconds); `track`: the exchange thread's name.
  ExchangeSpans(trace::Timeline* timeline, const std::vector<int64_t>* ready,
                std::string track);

  /// The step of the next exchange (its gradients' step).
  void set_step(int64_t step) { step_ = step; }
  /// A push of gradients computed on `version` starts; its data buffers
  /// are the attached tensors `order` (send order), of model keys `keys`
  /// (by attached tensor); both must stay unchanged until it is written.
  void StartPush(int64_t version, const std::vector<uint32_t>* order,
                 const std::vector<int>* keys);
  void OnWritten(const net::FrameBuffers& frame, size_t begin,
                 size_t end) override;
  /// A "send window" span: the push's next slice waited for the kernel.
  void OnWindow(const net::FrameBuffers& frame, bool waiting) override;
  /// A reply of `version` has begun to arrive.
  void StartReply(int64_t version);
  /// A slice of model key `key`, `bytes` long, is in.
  void OnSlice(int key, uint64_t bytes);

 private:
  void Name();
  void RecordPush(uint32_t tensor, uint64_t bytes, int64_t now);

  trace::Timeline* timeline_;
  const std::vector<int64_t>* ready_;
  const std::string track_;
  bool named_ = false;
  int64_t step_ = -1;
  int64_t push_version_ = -1;
  int64_t reply_version_ = -1;
  const std::vector<uint32_t>* order_ = nullptr;
  const std::vector<int>* keys_ = nullptr;
  int64_t last_write_ = 0;    // when the last write ended, or the push began
  int64_t window_since_ = 0;  // when the wait for the send window began
  int64_t last_arrival_ = 0;  // when the last slice (or the meta) came
};

}  // namespace pstrain::worker
