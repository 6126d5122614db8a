#pragma once
// FrameReader: an incremental parser for a byte stream of frames that does no
// I/O. Feed it bytes in pieces of any size; it says when a whole frame is in.
// It checks each frame with FrameParser, the checks net::Connection makes,
// before it allocates anything for the body, and gathers meta and data into
// buffers of its own. Used by the fuzzer and by tests; the network path
// reads tensor bytes straight into their destination instead. Not
// thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"
#include "wire/frame.h"
#include "wire/frame_parser.h"

namespace pstrain::wire {

class FrameReader {
 public:
  enum class State { kNeedMore, kFrame, kError };

  /// Frames whose body_len exceeds `max_frame_bytes` are refused from their
  /// header alone. Buffers keep the capacity of the largest frame seen.
  explicit FrameReader(uint64_t max_frame_bytes = kDefaultMaxFrameBytes);

  /// Consumes bytes from the front of *in (advancing it) until a frame is
  /// complete or the input is used up. kFrame: header(), meta() and data()
  /// hold the frame until the next Feed. kError: status() says why; the
  /// reader stays in error (a stream cannot be resynchronized).
  State Feed(std::string_view* in);

  const FrameHeader& header() const { return parser_.header(); }
  std::string_view meta() const { return meta_; }
  std::string_view data() const { return data_; }
  const Status& status() const { return status_; }

 private:
  // Forgets the frame handed out by the last kFrame; keeps capacity.
  void Reset();

  FrameParser parser_;
  std::string buf_;  // header + meta_len bytes gathered so far
  bool have_header_ = false;
  bool have_meta_len_ = false;
  std::string meta_;
  bool have_meta_ = false;  // the meta is in and passed the parser
  std::string data_;
  bool frame_ready_ = false;
  Status status_;
};

}  // namespace pstrain::wire
