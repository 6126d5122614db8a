#pragma once
// FrameParser: every check a frame passes as its bytes come in, stage by
// stage, with no I/O and no buffers of its own. The caller reads each
// stage's bytes wherever it likes and hands them over; each stage checks
// what it is given before the caller allocates for the next: the header
// bounds body_len, meta_len is bounded before the meta is read, and the
// meta must account for every data byte before the data is read (it goes
// straight to the caller's destination, unseen here). FrameReader, and so
// the fuzzer, and net::Connection both parse through this class, so that
// the fuzzer runs every check production makes on a peer's bytes.
// A value type; not thread-safe.

#include <cstdint>
#include <string_view>

#include "util/status.h"
#include "wire/frame.h"

namespace pstrain::wire {

class FrameParser {
 public:
  /// Bytes of the header and meta_len, the fixed-size start of a frame.
  static constexpr size_t kPrefixBytes = kFrameHeaderBytes + kMetaLenBytes;

  /// Frames whose body_len exceeds `max_frame_bytes` are refused from their
  /// header alone.
  explicit FrameParser(uint64_t max_frame_bytes = kDefaultMaxFrameBytes);

  /// Stage 1, which starts a frame whatever came before: decodes and checks
  /// the kFrameHeaderBytes at `in`; errors as DecodeFrameHeader's.
  Status Header(const char* in);
  /// Stage 2: decodes meta_len from the kMetaLenBytes at `in`. kCorruption
  /// "frame: meta_len N exceeds max M" or "... does not fit in body_len B -
  /// 4". REQUIRES (PS_CHECK): Header() accepted the frame's header.
  Status MetaLen(const char* in);
  /// Stage 3: checks the meta with ValidateFrame (it decodes as
  /// header().type says, and its descriptors add up to data_bytes()).
  /// Allocates nothing for the hot-path messages. REQUIRES (PS_CHECK):
  /// MetaLen() accepted; meta.size() == meta_len().
  Status Meta(std::string_view meta);

  /// The frame's header, once Header() has accepted it.
  const FrameHeader& header() const { return header_; }
  /// Bytes of meta and of data (body_len - 4 - meta_len), once MetaLen()
  /// has accepted the frame.
  uint64_t meta_len() const { return meta_len_; }
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  // The stage whose bytes come next. An error goes back to kHeader.
  enum class Stage { kHeader, kMetaLen, kMeta, kData };

  uint64_t max_frame_bytes_;
  Stage stage_ = Stage::kHeader;
  FrameHeader header_;
  uint64_t meta_len_ = 0;
  uint64_t data_bytes_ = 0;
};

}  // namespace pstrain::wire
