#pragma once
// ServerSpans: the server's side of --timeline (trace/timeline.h). It
// stamps the Engine's TraceMarks (ps/engine/outbox.h) with the time and records
// them as spans: each key's push as read from a worker (and, in streaming
// sync, added into the sums), on a track per worker ("from rank R"); the
// rule's work on a push that makes a version ("step vN") and each key's
// optimizer update ("update K vN") on the io thread's track; and each
// key's params reply as written to a worker ("pull K vN", on "to rank R"),
// from when its bytes could start (the key updated, the bytes before it
// written) to when the write that carried them ended.
// Threading: the io thread only, which runs the Engine and the writes.
// `*timeline` must outlive it.

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "net/frame_buffers.h"
#include "ps/engine/outbox.h"
#include "ps/rules/step_order.h"
#include "trace/timeline.h"

namespace pstrain::ps {

class ServerSpans {
 public:
  /// `order`: the order the server's keys are sent in, whose marks the
  /// params frames' buffers carry (ps/rules/step_order.h); it must outlive
  /// this.
  ServerSpans(trace::Timeline* timeline, const StepOrder* order);
  ServerSpans(const ServerSpans&) = delete;
  ServerSpans& operator=(const ServerSpans&) = delete;

  /// Records the Engine's `mark` (Outbox::Trace), stamped now.
  void Mark(const TraceMark& mark);
  /// What watches the writes of a params frame to `peer`; null when no
  /// reply to it was marked.
  /// Kept after its connection closes: a write's handler may still run.
  net::WriteObserver* Replies(PeerId peer);

 private:
  // The writes of one connection's params replies.
  class ReplyWrites : public net::WriteObserver {
   public:
    ReplyWrites(ServerSpans* owner, int tid) : owner_(owner), tid_(tid) {}
    void Start(int64_t version, int64_t now) {
      version_ = version;
      last_ = now;
    }
    void OnWritten(const net::FrameBuffers& frame, size_t begin,
                   size_t end) override;

   private:
    ServerSpans* owner_;
    const int tid_;
    int64_t version_ = -1;
    int64_t last_ = 0;  // when the last write ended, or the reply started
  };
  // A worker's push track: its tid and where its next span begins.
  struct Lane {
    int tid = 0;
    int64_t start = 0;
  };
  Lane& LaneOf(int lane);

  trace::Timeline* timeline_;
  const StepOrder* order_;
  std::unordered_map<int, Lane> lanes_;  // by worker rank, and kEngine
  std::unordered_map<PeerId, std::unique_ptr<ReplyWrites>> replies_;
  std::unordered_map<int, int> reply_tids_;  // by worker rank
  std::vector<int64_t> updated_;             // by key: its update's end
};

}  // namespace pstrain::ps
