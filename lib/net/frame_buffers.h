#pragma once
// FrameBuffers: one outgoing frame as a gather list, the frame prefix (header,
// meta_len, meta) in a reused string and the tensor bytes as borrowed spans.
// Writing it with one scatter-gather write sends tensor data straight from
// the tensors' storage, with no staging copy. A tagged frame
// (wire::kFrameTagged) is a list of groups, each a descriptor's tag and its
// bytes, that a gated write may send in any order. Not thread-safe; reuse
// one per connection so steady state allocates nothing.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <asio/buffer.hpp>

#include "wire/frame.h"

namespace pstrain::net {

class SendGate;
class FrameBuffers;

/// Hears which buffers of a gated frame have been written (--timeline).
class WriteObserver {
 public:
  virtual ~WriteObserver() = default;
  /// Buffers [begin, end) of frame.buffers() have been written; runs on the
  /// thread that runs the connection's io_context.
  virtual void OnWritten(const FrameBuffers& frame, size_t begin,
                         size_t end) = 0;
  /// A tagged frame's next group waits for its turn on the host's link
  /// (net/link_turn.h), then for the kernel to have sent all but the send
  /// window (Connection::SetSendWindow): `waiting` true as the wait
  /// starts, false as it ends. Same thread as OnWritten.
  virtual void OnWindow(const FrameBuffers& frame, bool waiting) {
    (void)frame;
    (void)waiting;
  }
};

class FrameBuffers {
 public:
  /// Starts a frame of `type` answering or carrying `request_id`, with meta
  /// bytes `meta` (copied) and data to be added with AddData.
  void Reset(wire::MsgType type, uint64_t request_id, std::string_view meta);
  /// Sets the request id (Client assigns ids when it sends).
  void SetRequestId(uint64_t request_id) { request_id_ = request_id; }
  /// Borrows `size` bytes at `data`; they must stay valid and unchanged
  /// until the write of this frame has completed. In a gated frame
  /// (SetGate) they are written once the gate has opened `mark`; marks
  /// must not decrease from one AddData to the next, but in a tagged frame.
  void AddData(const void* data, size_t size, uint32_t mark = 0);
  /// Makes this a tagged frame, if it is not yet, and starts a group: the
  /// data added from now until the next AddTag is descriptor `index`'s,
  /// sent after its tag. Every descriptor of the meta must have a group.
  void AddTag(uint32_t index);
  bool tagged() const { return !tags_.empty(); }
  /// Groups of a tagged frame, in the order added.
  size_t groups() const { return tags_.size(); }
  /// Group `g`'s buffers in Finish()'s list: [first, end), its tag first.
  size_t group_begin(size_t g) const { return group_buffers_[g]; }
  size_t group_end(size_t g) const {
    return g + 1 < group_buffers_.size() ? group_buffers_[g + 1]
                                         : buffers_.size();
  }
  /// Makes this frame wait on `gate` (which must outlive its write) for
  /// the marks of its data; nullptr (the default after Reset): none.
  void SetGate(SendGate* gate) { gate_ = gate; }
  SendGate* gate() const { return gate_; }
  /// Tells `observer` (which must outlive the write) of each write of this
  /// gated frame's buffers; nullptr (the default after Reset): none.
  void SetWriteObserver(WriteObserver* observer) { observer_ = observer; }
  /// Buffers [begin, end) have been written: tells the observer, if any.
  void Wrote(size_t begin, size_t end) const {
    if (observer_ != nullptr)
      observer_->OnWritten(*this, begin, end);
  }
  /// Tells the observer, if any, of a wait for the send window.
  void Window(bool waiting) const {
    if (observer_ != nullptr)
      observer_->OnWindow(*this, waiting);
  }
  /// The mark buffer `i` of Finish()'s list needs (0 for the prefix and
  /// tags).
  uint32_t mark(size_t i) const { return buffer_marks_[i]; }
  /// Builds the prefix (the data length is now known) and returns the list.
  const std::vector<asio::const_buffer>& Finish();
  /// Finish()'s list as it was last built.
  const std::vector<asio::const_buffer>& buffers() const { return buffers_; }
  wire::MsgType type() const { return type_; }
  /// Total bytes of the frame, header included.
  uint64_t frame_bytes() const {
    return prefix_.size() + data_bytes_ + tags_.size() * wire::kTagBytes;
  }

 private:
  wire::MsgType type_ = wire::MsgType::kAck;
  uint64_t request_id_ = 0;
  std::string meta_;
  std::string prefix_;
  std::vector<asio::const_buffer> data_;
  std::vector<uint32_t> marks_;                          // by data_ index
  std::vector<std::array<char, wire::kTagBytes>> tags_;  // by group
  std::vector<size_t> tag_data_;       // by group: its first data_ index
  std::vector<size_t> group_buffers_;  // by group: its tag in buffers_
  SendGate* gate_ = nullptr;
  WriteObserver* observer_ = nullptr;
  std::vector<asio::const_buffer> buffers_;
  std::vector<uint32_t> buffer_marks_;  // by buffers_ index
  uint64_t data_bytes_ = 0;
};

}  // namespace pstrain::net
