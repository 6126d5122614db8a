#include "wire/frame.h"

#include <cstdio>
#include <string>

#include "util/check.h"

namespace pstrain::wire {
namespace {

// Flag bits this build understands. A peer that sets a bit we do not know
// means something we cannot honour, so it is refused, not ignored.
constexpr uint32_t kKnownFlags = kFrameTagged;

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(v));
  return buf;
}

Status HeaderError(const std::string& what) {
  return Corruption("frame header: " + what);
}

}  // namespace

bool IsMsgType(uint16_t value) {
  switch (value) {
#define PSTRAIN_WIRE_CASE(value, Enum, name, Struct, Data) case value:
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_CASE)
#undef PSTRAIN_WIRE_CASE
    return true;
  }
  return false;
}

const char* MsgTypeName(MsgType type) {
  switch (type) {
#define PSTRAIN_WIRE_CASE(value, Enum, name, Struct, Data) \
  case MsgType::Enum:                                      \
    return name;
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_CASE)
#undef PSTRAIN_WIRE_CASE
  }
  return "unknown";
}

DataSection DataSectionOf(MsgType type) {
  switch (type) {
#define PSTRAIN_WIRE_CASE(value, Enum, name, Struct, Data) \
  case MsgType::Enum:                                      \
    return DataSection::Data;
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_CASE)
#undef PSTRAIN_WIRE_CASE
  }
  PS_CHECK(false) << "message type " << static_cast<uint16_t>(type);
  return DataSection::kNone;
}

void EncodeFixed16(char* out, uint16_t v) {
  out[0] = static_cast<char>(v & 0xFF);
  out[1] = static_cast<char>(v >> 8);
}

void EncodeFixed32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

void EncodeFixed64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint16_t DecodeFixed16(const char* in) {
  const auto* p = reinterpret_cast<const unsigned char*>(in);
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

uint32_t DecodeFixed32(const char* in) {
  const auto* p = reinterpret_cast<const unsigned char*>(in);
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

uint64_t DecodeFixed64(const char* in) {
  return uint64_t{DecodeFixed32(in)} | (uint64_t{DecodeFixed32(in + 4)} << 32);
}

void EncodeFrameHeader(const FrameHeader& header, char* out) {
  EncodeFixed32(out, kMagic);
  EncodeFixed16(out + 4, header.version);
  EncodeFixed16(out + 6, static_cast<uint16_t>(header.type));
  EncodeFixed32(out + 8, header.flags);
  EncodeFixed64(out + 12, header.body_len);
  EncodeFixed64(out + 20, header.request_id);
}

Status DecodeFrameHeader(const char* in, uint64_t max_frame_bytes,
                         FrameHeader* out) {
  // Magic first, then version: both sit at the same offsets in every
  // version, so any two builds can tell "not pstrain" from "other pstrain".
  const uint32_t magic = DecodeFixed32(in);
  if (magic != kMagic) {
    return HeaderError("magic is " + Hex32(magic) + ", expected " +
                       Hex32(kMagic));
  }
  const uint16_t version = DecodeFixed16(in + 4);
  if (version != kWireVersion) {
    return Incompatible("protocol version " + std::to_string(version) +
                        ", this build speaks " + std::to_string(kWireVersion));
  }
  const uint16_t type = DecodeFixed16(in + 6);
  if (!IsMsgType(type)) {
    return HeaderError("type " + std::to_string(type) +
                       " is unknown, expected 1.." +
                       std::to_string(kMaxMsgType));
  }
  const uint32_t flags = DecodeFixed32(in + 8);
  if ((flags & ~kKnownFlags) != 0) {
    return HeaderError("flags " + Hex32(flags) + " has unknown bits " +
                       Hex32(flags & ~kKnownFlags) + ", expected only " +
                       Hex32(kKnownFlags));
  }
  const uint64_t body_len = DecodeFixed64(in + 12);
  if (body_len < kMetaLenBytes) {
    return HeaderError("body_len " + std::to_string(body_len) +
                       " is less than 4, the size of meta_len");
  }
  if (body_len > max_frame_bytes) {
    return HeaderError("body_len " + std::to_string(body_len) +
                       " exceeds max_frame_bytes " +
                       std::to_string(max_frame_bytes));
  }
  out->version = version;
  out->type = static_cast<MsgType>(type);
  out->flags = flags;
  out->body_len = body_len;
  out->request_id = DecodeFixed64(in + 20);
  return Status::Ok();
}

}  // namespace pstrain::wire
