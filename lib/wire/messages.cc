// What messages.h declares about whole frames rather than one message:
// the frame prefix, the body length check and ValidateFrame, whose type
// dispatch is generated from wire/message_table.h. The codecs are in
// control_messages.cc, tensor_messages.cc, auth_messages.cc and
// module_messages.cc.

#include "wire/messages.h"

#include <limits>
#include <string>

#include "util/check.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

// Checks a frame of a `Struct` message, whose table row says `kData`.
template <typename Struct, DataSection kData>
Status ValidateAs(MsgType type, std::string_view meta, uint64_t data_bytes,
                  bool tagged) {
  if constexpr (kData == DataSection::kTensors) {
    return internal::ValidateTensorMeta(meta, type, data_bytes, tagged);
  } else {
    (void)tagged;  // ValidateFrame refuses it on messages without tensors
    if (data_bytes != 0) {
      return Corruption(std::string(MsgTypeName(type)) + ": data section is " +
                        std::to_string(data_bytes) + " bytes, expected 0");
    }
    Struct m;
    return DecodeMeta(meta, &m);
  }
}

}  // namespace

Status DataBytes(const std::vector<TensorDesc>& descs, uint64_t* total) {
  uint64_t sum = 0;
  for (size_t i = 0; i < descs.size(); ++i) {
    if (descs[i].nbytes > std::numeric_limits<uint64_t>::max() - sum) {
      return Corruption("data bytes: sum overflows u64 at tensor " +
                        std::to_string(i));
    }
    sum += descs[i].nbytes;
  }
  *total = sum;
  return Status::Ok();
}

Status DataBytes(const std::vector<TensorDesc>& descs,
                 const std::vector<SparseRows>& rows, uint64_t* total) {
  uint64_t sum = 0;
  PS_RETURN_IF_ERROR(DataBytes(descs, &sum));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].rows.nbytes > std::numeric_limits<uint64_t>::max() - sum) {
      return Corruption("data bytes: sum overflows u64 at rows " +
                        std::to_string(i));
    }
    sum += rows[i].rows.nbytes;
  }
  *total = sum;
  return Status::Ok();
}

void EncodeFramePrefix(MsgType type, uint64_t request_id, std::string_view meta,
                       uint64_t data_bytes, std::string* out, uint32_t flags) {
  PS_CHECK(meta.size() <= kMaxMetaBytes)
      << "meta of " << meta.size() << " bytes";
  PS_CHECK(data_bytes <=
           std::numeric_limits<uint64_t>::max() - kMetaLenBytes - meta.size())
      << "body_len overflows u64";
  FrameHeader header;
  header.type = type;
  header.flags = flags;
  header.body_len = kMetaLenBytes + meta.size() + data_bytes;
  header.request_id = request_id;
  out->clear();
  out->resize(kFrameHeaderBytes + kMetaLenBytes);
  EncodeFrameHeader(header, out->data());
  EncodeFixed32(out->data() + kFrameHeaderBytes,
                static_cast<uint32_t>(meta.size()));
  out->append(meta.data(), meta.size());
}

Status CheckBodyLength(const FrameHeader& header, uint64_t meta_len,
                       uint64_t data_bytes) {
  PS_RETURN_IF_ERROR(internal::CheckMetaLength(header, meta_len));
  if (data_bytes != header.body_len - kMetaLenBytes - meta_len) {
    return Corruption("frame: body_len " + std::to_string(header.body_len) +
                      " != 4 + meta_len " + std::to_string(meta_len) +
                      " + data " + std::to_string(data_bytes));
  }
  return Status::Ok();
}

Status ValidateFrame(const FrameHeader& header, std::string_view meta,
                     uint64_t data_bytes) {
  PS_RETURN_IF_ERROR(CheckBodyLength(header, meta.size(), data_bytes));
  const bool tagged = (header.flags & kFrameTagged) != 0;
  if (tagged && header.type != MsgType::kPush &&
      header.type != MsgType::kPushPull && header.type != MsgType::kParams) {
    return Corruption(std::string(MsgTypeName(header.type)) +
                      ": flags has the tagged bit, which only push, "
                      "push_pull and params may carry");
  }
  switch (header.type) {
#define PSTRAIN_WIRE_CASE(value, Enum, name, Struct, Data)          \
  case MsgType::Enum:                                               \
    return ValidateAs<Struct, DataSection::Data>(header.type, meta, \
                                                 data_bytes, tagged);
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_CASE)
#undef PSTRAIN_WIRE_CASE
  }
  return Corruption("frame header: type " +
                    std::to_string(static_cast<uint16_t>(header.type)) +
                    " is unknown, expected 1.." + std::to_string(kMaxMsgType));
}

}  // namespace pstrain::wire
