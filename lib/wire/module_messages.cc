// The codec of module, the one message whose data section is a file (the
// job's TorchScript module) rather than tensors, and its walk for
// ValidateFrame. Layout: messages.h. Not in tensor_messages.cc: its meta is
// none of the parameter messages' "u64 version, u32 count, descriptors".

#include <cstdio>
#include <string>
#include <string_view>

#include "util/check.h"
#include "wire/messages.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

using internal::MetaReader;
using internal::MetaWriter;

bool IsLowerHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != kSha256HexChars)
    return false;
  for (char c : s) {
    if (!IsLowerHex(c))
      return false;
  }
  return true;
}

// A str of exactly kSha256HexChars lowercase hex digits; the length is
// checked before *out grows.
Status ReadSha256(MetaReader& r, std::string* out) {
  uint32_t len = 0;
  MetaReader peek = r;
  PS_RETURN_IF_ERROR(peek.U32("sha256", &len));
  if (len != kSha256HexChars) {
    return r.Error("sha256 of " + std::to_string(len) + " chars, expected " +
                   std::to_string(kSha256HexChars));
  }
  PS_RETURN_IF_ERROR(r.Str("sha256", out));
  for (size_t i = 0; i < out->size(); ++i) {
    if (IsLowerHex((*out)[i]))
      continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X",
                  static_cast<unsigned>(static_cast<uint8_t>((*out)[i])));
    return r.Error("sha256 byte " + std::string(hex) + " at " +
                   std::to_string(i) + " is not a lowercase hex digit");
  }
  return Status::Ok();
}

// The file's descriptor: key 0, raw, uint8, [n]. DecodeTensorDesc has
// already checked nbytes == numel x 1 for a raw uint8 descriptor.
Status CheckFileDesc(const MetaReader& r, const TensorDesc& d) {
  if (d.key != 0)
    return r.Error("bytes: key " + std::to_string(d.key) + ", expected 0");
  if (d.codec != Codec::kRaw) {
    return r.Error(std::string("bytes: codec ") + CodecName(d.codec) +
                   ", expected raw");
  }
  if (d.dtype != DType::kUInt8) {
    return r.Error(std::string("bytes: dtype ") + DTypeName(d.dtype) +
                   ", expected uint8");
  }
  if (d.ndim != 1) {
    return r.Error("bytes: ndim " + std::to_string(d.ndim) +
                   ", expected 1 ([n])");
  }
  return Status::Ok();
}

}  // namespace

namespace internal {

Status ValidateModuleMeta(std::string_view meta, uint64_t data_bytes) {
  ModuleMsg m;
  PS_RETURN_IF_ERROR(DecodeMeta(meta, &m));
  if (m.bytes.nbytes == data_bytes)
    return Status::Ok();
  return Corruption(std::string(MsgTypeName(TypeOf(m))) + ": data section is " +
                    std::to_string(data_bytes) + " bytes, descriptors say " +
                    std::to_string(m.bytes.nbytes));
}

}  // namespace internal

void EncodeMeta(const ModuleMsg& m, std::string* meta) {
  const TensorDesc& d = m.bytes;
  PS_CHECK(IsSha256Hex(m.sha256))
      << "sha256 of " << m.sha256.size() << " bytes, not 64 of [0-9a-f]";
  PS_CHECK(d.key == 0 && d.codec == Codec::kRaw && d.dtype == DType::kUInt8 &&
           d.ndim == 1 && d.dims[0] >= 0 &&
           d.nbytes == static_cast<uint64_t>(d.dims[0]))
      << "a module's bytes are key 0, raw uint8 [n], nbytes n";
  meta->clear();
  MetaWriter w(meta);
  w.Str(m.sha256);
  w.Desc(d);
}

Status DecodeMeta(std::string_view meta, ModuleMsg* out) {
  MetaReader r(meta, MsgTypeName(TypeOf(*out)));
  PS_RETURN_IF_ERROR(ReadSha256(r, &out->sha256));
  PS_RETURN_IF_ERROR(r.Desc(&out->bytes));
  PS_RETURN_IF_ERROR(CheckFileDesc(r, out->bytes));
  return r.Finish();
}

}  // namespace pstrain::wire
