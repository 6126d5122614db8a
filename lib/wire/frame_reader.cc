#include "wire/frame_reader.h"

#include <algorithm>

#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

// body_len may reach max_frame_bytes (4 GiB by default), which must fit in
// a std::string's size.
static_assert(sizeof(size_t) >= sizeof(uint64_t), "needs a 64-bit size_t");

constexpr size_t kPrefixBytes = kFrameHeaderBytes + kMetaLenBytes;

// Moves bytes from the front of *in to the end of *dst until *dst holds
// `want` bytes; returns whether it does. REQUIRES: dst->size() <= want.
bool Fill(std::string_view* in, size_t want, std::string* dst) {
  const size_t take = std::min(want - dst->size(), in->size());
  dst->append(in->data(), take);
  in->remove_prefix(take);
  return dst->size() == want;
}

}  // namespace

FrameReader::FrameReader(uint64_t max_frame_bytes)
    : max_frame_bytes_(max_frame_bytes) {}

void FrameReader::Reset() {
  buf_.clear();
  meta_.clear();
  data_.clear();
  have_header_ = false;
  have_meta_len_ = false;
  have_meta_ = false;
  frame_ready_ = false;
  meta_len_ = 0;
  data_len_ = 0;
}

// Each stage checks what it has read before the next one allocates: the
// header bounds body_len, meta_len is bounded by body_len and kMaxMetaBytes,
// and the decoded meta must account for every data byte before data_ grows.
FrameReader::State FrameReader::Feed(std::string_view* in) {
  if (!status_.ok())
    return State::kError;
  if (frame_ready_)
    Reset();
  if (!have_header_) {
    if (!Fill(in, kFrameHeaderBytes, &buf_))
      return State::kNeedMore;
    status_ = DecodeFrameHeader(buf_.data(), max_frame_bytes_, &header_);
    if (!status_.ok())
      return State::kError;
    have_header_ = true;
  }
  if (!have_meta_len_) {
    if (!Fill(in, kPrefixBytes, &buf_))
      return State::kNeedMore;
    meta_len_ = DecodeFixed32(buf_.data() + kFrameHeaderBytes);
    status_ = internal::CheckMetaLength(header_, meta_len_);
    if (!status_.ok())
      return State::kError;
    data_len_ = header_.body_len - kMetaLenBytes - meta_len_;
    meta_.reserve(meta_len_);
    have_meta_len_ = true;
  }
  if (!have_meta_) {
    if (!Fill(in, meta_len_, &meta_))
      return State::kNeedMore;
    status_ = ValidateFrame(header_, meta_, data_len_);
    if (!status_.ok())
      return State::kError;
    data_.reserve(data_len_);
    have_meta_ = true;
  }
  if (!Fill(in, data_len_, &data_))
    return State::kNeedMore;
  frame_ready_ = true;
  return State::kFrame;
}

}  // namespace pstrain::wire
