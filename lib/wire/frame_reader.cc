#include "wire/frame_reader.h"

#include <algorithm>

namespace pstrain::wire {
namespace {

// body_len may reach max_frame_bytes (4 GiB by default), which must fit in
// a std::string's size.
static_assert(sizeof(size_t) >= sizeof(uint64_t), "needs a 64-bit size_t");

// Moves bytes from the front of *in to the end of *dst until *dst holds
// `want` bytes; returns whether it does. REQUIRES: dst->size() <= want.
bool Fill(std::string_view* in, size_t want, std::string* dst) {
  const size_t take = std::min(want - dst->size(), in->size());
  dst->append(in->data(), take);
  in->remove_prefix(take);
  return dst->size() == want;
}

}  // namespace

FrameReader::FrameReader(uint64_t max_frame_bytes) : parser_(max_frame_bytes) {}

void FrameReader::Reset() {
  buf_.clear();
  meta_.clear();
  data_.clear();
  have_header_ = false;
  have_meta_len_ = false;
  have_meta_ = false;
  frame_ready_ = false;
}

// FrameParser checks each stage before the next one allocates.
FrameReader::State FrameReader::Feed(std::string_view* in) {
  if (!status_.ok())
    return State::kError;
  if (frame_ready_)
    Reset();
  if (!have_header_) {
    if (!Fill(in, kFrameHeaderBytes, &buf_))
      return State::kNeedMore;
    status_ = parser_.Header(buf_.data());
    if (!status_.ok())
      return State::kError;
    have_header_ = true;
  }
  if (!have_meta_len_) {
    if (!Fill(in, FrameParser::kPrefixBytes, &buf_))
      return State::kNeedMore;
    status_ = parser_.MetaLen(buf_.data() + kFrameHeaderBytes);
    if (!status_.ok())
      return State::kError;
    meta_.reserve(parser_.meta_len());
    have_meta_len_ = true;
  }
  if (!have_meta_) {
    if (!Fill(in, parser_.meta_len(), &meta_))
      return State::kNeedMore;
    status_ = parser_.Meta(meta_);
    if (!status_.ok())
      return State::kError;
    data_.reserve(parser_.data_bytes());
    have_meta_ = true;
  }
  if (!Fill(in, parser_.data_bytes(), &data_))
    return State::kNeedMore;
  frame_ready_ = true;
  return State::kFrame;
}

}  // namespace pstrain::wire
