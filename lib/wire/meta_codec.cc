#include "wire/meta_codec.h"

#include <limits>
#include <string>

#include "util/check.h"
#include "wire/messages.h"

namespace pstrain::wire::internal {

Status CheckDType(uint8_t v) {
  if (v < 1 || v > kMaxDType) {
    return Corruption("dtype " + std::to_string(v) +
                      " is unknown, expected 1.." + std::to_string(kMaxDType));
  }
  return Status::Ok();
}

Status CheckRank(uint8_t ndim) {
  if (ndim > kMaxTensorRank) {
    return Corruption("ndim " + std::to_string(ndim) + " exceeds " +
                      std::to_string(kMaxTensorRank));
  }
  return Status::Ok();
}

Status CheckDims(const int64_t* dims, size_t ndim) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t product = 1;
  auto name = [](size_t i) { return "dims[" + std::to_string(i) + "]"; };
  for (size_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) {
      return Corruption(name(i) + " is " + std::to_string(dims[i]) +
                        ", expected >= 0");
    }
    const int64_t d = dims[i] == 0 ? 1 : dims[i];
    if (product > kMax / d) {
      return Corruption("dims product overflows int64 at " + name(i));
    }
    product *= d;
  }
  return Status::Ok();
}

Status CheckMetaLength(const FrameHeader& header, uint64_t meta_len) {
  if (meta_len > kMaxMetaBytes) {
    return Corruption("frame: meta_len " + std::to_string(meta_len) +
                      " exceeds max " + std::to_string(kMaxMetaBytes));
  }
  if (header.body_len < kMetaLenBytes ||
      meta_len > header.body_len - kMetaLenBytes) {
    return Corruption("frame: meta_len " + std::to_string(meta_len) +
                      " does not fit in body_len " +
                      std::to_string(header.body_len) + " - 4");
  }
  return Status::Ok();
}

void MetaWriter::U16(uint16_t v) {
  char buf[2];
  EncodeFixed16(buf, v);
  out_->append(buf, sizeof buf);
}

void MetaWriter::U32(uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  out_->append(buf, sizeof buf);
}

void MetaWriter::U64(uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  out_->append(buf, sizeof buf);
}

void MetaWriter::Str(std::string_view s) {
  PS_CHECK(s.size() <= kMaxStringBytes)
      << "string of " << s.size() << " bytes exceeds " << kMaxStringBytes;
  U32(static_cast<uint32_t>(s.size()));
  out_->append(s.data(), s.size());
}

void MetaWriter::Desc(const TensorDesc& desc) {
  PS_CHECK(desc.ndim <= kMaxTensorRank) << "ndim " << int{desc.ndim};
  const size_t at = out_->size();
  out_->resize(at + desc.encoded_size());
  EncodeTensorDesc(desc, out_->data() + at);
}

Status MetaReader::Need(const char* field, size_t n) const {
  if (in_.size() >= n)
    return Status::Ok();
  return Error("truncated at " + std::string(field) + ": " +
               std::to_string(in_.size()) + " bytes left, need " +
               std::to_string(n));
}

Status MetaReader::U8(const char* field, uint8_t* v) {
  PS_RETURN_IF_ERROR(Need(field, 1));
  *v = static_cast<uint8_t>(in_[0]);
  in_.remove_prefix(1);
  return Status::Ok();
}

Status MetaReader::U16(const char* field, uint16_t* v) {
  PS_RETURN_IF_ERROR(Need(field, 2));
  *v = DecodeFixed16(in_.data());
  in_.remove_prefix(2);
  return Status::Ok();
}

Status MetaReader::U32(const char* field, uint32_t* v) {
  PS_RETURN_IF_ERROR(Need(field, 4));
  *v = DecodeFixed32(in_.data());
  in_.remove_prefix(4);
  return Status::Ok();
}

Status MetaReader::U64(const char* field, uint64_t* v) {
  PS_RETURN_IF_ERROR(Need(field, 8));
  *v = DecodeFixed64(in_.data());
  in_.remove_prefix(8);
  return Status::Ok();
}

Status MetaReader::I64(const char* field, int64_t* v) {
  uint64_t u = 0;
  PS_RETURN_IF_ERROR(U64(field, &u));
  *v = static_cast<int64_t>(u);
  return Status::Ok();
}

Status MetaReader::Str(const char* field, std::string* out) {
  uint32_t len = 0;
  PS_RETURN_IF_ERROR(U32(field, &len));
  // Messages are built only on failure: the happy path allocates nothing.
  auto what = [&] {
    return std::string(field) + " length " + std::to_string(len);
  };
  if (len > kMaxStringBytes) {
    return Error(what() + " exceeds max " + std::to_string(kMaxStringBytes));
  }
  if (len > in_.size()) {
    return Error(what() + " exceeds the " + std::to_string(in_.size()) +
                 " bytes left");
  }
  out->assign(in_.data(), len);
  in_.remove_prefix(len);
  return Status::Ok();
}

Status MetaReader::Count(size_t min_item_bytes, uint32_t* count) {
  uint32_t n = 0;
  PS_RETURN_IF_ERROR(U32("count", &n));
  if (n > kMaxTensorsPerMessage) {
    return Error("count " + std::to_string(n) + " exceeds max " +
                 std::to_string(kMaxTensorsPerMessage));
  }
  // n <= 2^20 and min_item_bytes is small: the product cannot overflow.
  if (uint64_t{n} * min_item_bytes > in_.size()) {
    return Error("count " + std::to_string(n) + " needs at least " +
                 std::to_string(uint64_t{n} * min_item_bytes) + " bytes, " +
                 std::to_string(in_.size()) + " left");
  }
  *count = n;
  return Status::Ok();
}

Status MetaReader::Desc(TensorDesc* desc) {
  return Wrap(DecodeTensorDesc(&in_, desc));
}

Status MetaReader::Desc(const char* field, TensorDesc* desc) {
  Status s = DecodeTensorDesc(&in_, desc);
  if (s.ok())
    return s;
  return Error(std::string(field) + ": " + s.message());
}

Status MetaReader::Finish() const {
  if (in_.empty())
    return Status::Ok();
  return Error(std::to_string(in_.size()) +
               (in_.size() == 1 ? " trailing byte" : " trailing bytes"));
}

Status MetaReader::Error(const std::string& what) const {
  std::string m = message_;
  m += ": ";
  if (item_ != nullptr) {
    m += std::string(item_) + " " + std::to_string(index_) + ": ";
  }
  return Corruption(m + what);
}

Status MetaReader::Wrap(const Status& s) const {
  if (s.ok())
    return s;
  return Error(s.message());
}

}  // namespace pstrain::wire::internal
