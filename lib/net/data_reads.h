#pragma once
// DataReads: how a connection reads a frame's data section into its
// handler's buffers: all at once; one buffer at a time, for a handler that
// hears of each (piece by piece); or, for a tagged frame
// (wire::kFrameTagged), a tag, then the buffers of the descriptor it
// names, descriptors in whatever order their tags come, each exactly once,
// so that the sizes the meta declared hold; piece by piece, a buffer may
// be read in place (from a shared-memory ring, where it lies). No I/O. Not
// thread-safe; one per connection, reused frame after frame.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <asio/buffer.hpp>

#include "util/status.h"
#include "wire/frame.h"

namespace pstrain::net {

class DataReads {
 public:
  /// What to read next: nothing (the frame is in), a tag (into tag()), or
  /// buffers [begin, end) of the handler's list.
  struct Step {
    enum Kind { kDone, kTag, kBuffers, kInPlace } kind = kDone;
    size_t begin = 0;
    size_t end = 0;
  };

  /// A new frame: read at once, no descriptor named.
  void Reset() {
    piecewise_ = false;
    in_place_up_to_ = 0;
    first_.clear();
  }
  void ReadPieceByPiece() { piecewise_ = true; }
  /// Piece by piece, a buffer of at most `bytes` (> 0) is a kInPlace step:
  /// offered where it lies once all of it is in, rather than read into.
  void ReadInPlace(uint64_t bytes) { in_place_up_to_ = bytes; }
  bool piecewise() const { return piecewise_; }
  /// Where each descriptor's buffers start in the handler's list
  /// (Connection::ReadTagged), ascending.
  void Name(const std::vector<size_t>& first) { first_ = first; }
  bool named() const { return !first_.empty(); }
  /// The handler's list for the frame of `header` is `dst`: kCorruption
  /// unless its bytes, and the tags', add up to the frame's `data_bytes`,
  /// or for a tagged frame whose descriptors the handler did not name
  /// (an untagged frame drops any names).
  Status Start(const wire::FrameHeader& header, uint64_t data_bytes,
               const std::vector<asio::mutable_buffer>& dst);
  Step Next() const;
  /// Step `step` (buffers) is in.
  void Done(const Step& step) { next_ = step.end; }
  /// Where the next tag is read: wire::kTagBytes.
  char* tag() { return tag_; }
  /// The tag just read: its descriptor's buffers come next. kCorruption,
  /// naming `what` (the message), for a tag that names no descriptor or
  /// one already in.
  Status Take(const std::string& what);

 private:
  bool piecewise_ = false;
  uint64_t in_place_up_to_ = 0;
  std::vector<uint64_t> sizes_;  // by buffer, for in-place reads only
  bool tagged_ = false;
  std::vector<size_t> first_;
  std::vector<bool> in_;  // by descriptor
  size_t buffers_ = 0;
  size_t next_ = 0;  // the next buffer to read, up to end_
  size_t end_ = 0;
  size_t left_ = 0;  // descriptors not yet in
  char tag_[wire::kTagBytes] = {};
};

}  // namespace pstrain::net
