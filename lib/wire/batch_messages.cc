// The codecs of push_batch and batch_done, the messages of --placement
// server (the model on the server, workers sending it their batches), and
// push_batch's walk for ValidateFrame. Layouts: messages.h. Not in
// tensor_messages.cc: push_batch's meta is none of the parameter messages'
// "u64 version, u32 count, descriptors", and that file is near 400 lines.

#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "util/check.h"
#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

using internal::MetaReader;
using internal::MetaWriter;

constexpr uint32_t kXKey = 0;
constexpr uint32_t kYKey = 1;

// What a batch's x or y must be, beyond DecodeTensorDesc's own checks: key
// `key`, raw, x float32 and y int64 or float32, at least one dim, at least
// one sample. Unprefixed ("key 1, expected 0"): the caller names the field.
Status CheckBatchDesc(const TensorDesc& d, uint32_t key) {
  if (d.key != key) {
    return Corruption("key " + std::to_string(d.key) + ", expected " +
                      std::to_string(key));
  }
  if (d.codec != Codec::kRaw) {
    return Corruption(std::string("codec ") + CodecName(d.codec) +
                      ", expected raw");
  }
  if (key == kXKey && d.dtype != DType::kFloat32) {
    return Corruption(std::string("dtype ") + DTypeName(d.dtype) +
                      ", expected float32");
  }
  if (key == kYKey && d.dtype != DType::kInt64 && d.dtype != DType::kFloat32) {
    return Corruption(std::string("dtype ") + DTypeName(d.dtype) +
                      ", expected int64 or float32");
  }
  if (d.ndim == 0)
    return Corruption("ndim 0, expected at least 1 ([samples, ...])");
  if (d.dims[0] == 0)
    return Corruption("dims[0] 0 (an empty batch), expected at least 1");
  return Status::Ok();
}

Status ReadBatchDesc(MetaReader& r, const char* field, uint32_t key,
                     TensorDesc* d) {
  PS_RETURN_IF_ERROR(r.Desc(field, d));
  Status s = CheckBatchDesc(*d, key);
  if (s.ok())
    return s;
  return r.Error(std::string(field) + ": " + s.message());
}

// EncodeMeta's PS_CHECK: what DecodeMeta would refuse is a programmer error.
void CheckEncodable(const TensorDesc& d, const char* field, uint32_t key) {
  PS_CHECK(d.ndim <= kMaxTensorRank)
      << "push_batch: " << field << ": ndim " << int{d.ndim};
  const Status s = CheckBatchDesc(d, key);
  PS_CHECK(s.ok()) << "push_batch: " << field << ": " << s.message();
  PS_CHECK(internal::CheckDims(d.dims.data(), d.ndim).ok())
      << "push_batch: " << field << ": a negative dim or too many elements";
  const uint64_t numel = static_cast<uint64_t>(d.numel());
  const uint64_t size = DTypeSize(d.dtype);
  PS_CHECK(numel <= std::numeric_limits<uint64_t>::max() / size &&
           d.nbytes == numel * size)
      << "push_batch: " << field << ": nbytes " << d.nbytes << " for " << numel
      << " elements of " << size << " bytes";
}

}  // namespace

namespace internal {

Status ValidateBatchMeta(std::string_view meta, uint64_t data_bytes) {
  PushBatch m;
  PS_RETURN_IF_ERROR(DecodeMeta(meta, &m));
  const uint64_t x = m.x.nbytes;
  const uint64_t y = m.y.nbytes;
  if (x <= data_bytes && y == data_bytes - x)
    return Status::Ok();
  // x + y may pass 2^64 (two descriptors of 2^63 bytes each decode).
  const std::string say = y <= std::numeric_limits<uint64_t>::max() - x
                              ? std::to_string(x + y)
                              : std::to_string(x) + " + " + std::to_string(y);
  return Corruption(std::string(MsgTypeName(TypeOf(m))) + ": data section is " +
                    std::to_string(data_bytes) + " bytes, descriptors say " +
                    say);
}

}  // namespace internal

void EncodeMeta(const PushBatch& m, std::string* meta) {
  CheckEncodable(m.x, "x", kXKey);
  CheckEncodable(m.y, "y", kYKey);
  PS_CHECK(m.x.dims[0] == m.y.dims[0])
      << "push_batch: x has " << m.x.dims[0] << " samples, y " << m.y.dims[0];
  meta->clear();
  MetaWriter w(meta);
  w.U64(m.version);
  w.Desc(m.x);
  w.Desc(m.y);
}

Status DecodeMeta(std::string_view meta, PushBatch* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(r.U64("version", &out->version));
  PS_RETURN_IF_ERROR(ReadBatchDesc(r, "x", kXKey, &out->x));
  PS_RETURN_IF_ERROR(ReadBatchDesc(r, "y", kYKey, &out->y));
  if (out->x.dims[0] != out->y.dims[0]) {
    return r.Error("x has " + std::to_string(out->x.dims[0]) + " samples, y " +
                   std::to_string(out->y.dims[0]));
  }
  return r.Finish();
}

void EncodeMeta(const BatchDone& m, std::string* meta) {
  uint64_t bits = 0;
  static_assert(sizeof bits == sizeof m.loss, "loss travels as 8 bytes");
  std::memcpy(&bits, &m.loss, sizeof bits);
  meta->clear();
  MetaWriter w(meta);
  w.U64(m.version);
  w.U64(bits);
  w.U8(m.stop ? kBatchDoneStop : 0);
}

Status DecodeMeta(std::string_view meta, BatchDone* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  uint64_t bits = 0;
  uint8_t flags = 0;
  PS_RETURN_IF_ERROR(r.U64("version", &out->version));
  PS_RETURN_IF_ERROR(r.U64("loss", &bits));
  PS_RETURN_IF_ERROR(r.U8("flags", &flags));
  if ((flags & ~kBatchDoneStop) != 0) {
    return r.Error("flags " + std::to_string(flags) +
                   " has unknown bits, expected 0 or " +
                   std::to_string(kBatchDoneStop));
  }
  std::memcpy(&out->loss, &bits, sizeof bits);  // any bits, NaN included
  out->stop = (flags & kBatchDoneStop) != 0;
  return r.Finish();
}

}  // namespace pstrain::wire
