#include "wire/frame_parser.h"

#include "util/check.h"
#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {

FrameParser::FrameParser(uint64_t max_frame_bytes)
    : max_frame_bytes_(max_frame_bytes) {}

Status FrameParser::Header(const char* in) {
  stage_ = Stage::kHeader;
  meta_len_ = data_bytes_ = 0;
  PS_RETURN_IF_ERROR(DecodeFrameHeader(in, max_frame_bytes_, &header_));
  stage_ = Stage::kMetaLen;
  return Status::Ok();
}

Status FrameParser::MetaLen(const char* in) {
  PS_CHECK(stage_ == Stage::kMetaLen) << "meta_len before its header";
  stage_ = Stage::kHeader;
  const uint64_t meta_len = DecodeFixed32(in);
  PS_RETURN_IF_ERROR(internal::CheckMetaLength(header_, meta_len));
  meta_len_ = meta_len;
  data_bytes_ = header_.body_len - kMetaLenBytes - meta_len;
  stage_ = Stage::kMeta;
  return Status::Ok();
}

Status FrameParser::Meta(std::string_view meta) {
  PS_CHECK(stage_ == Stage::kMeta && meta.size() == meta_len_)
      << "meta of " << meta.size() << " bytes, expected " << meta_len_;
  stage_ = Stage::kHeader;
  PS_RETURN_IF_ERROR(ValidateFrame(header_, meta, data_bytes_));
  stage_ = Stage::kData;
  return Status::Ok();
}

}  // namespace pstrain::wire
