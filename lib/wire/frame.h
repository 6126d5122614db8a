#pragma once
// The frame: every pstrain message is a 28-byte little-endian header followed
// by a body. The byte layout is specified in share/doc/wire-format.md; change
// both files in the same commit, and bump kWireVersion on any incompatible
// change. No torch, no asio: bytes in, bytes out. Functions here are
// thread-compatible and allocate nothing unless they say so.
//
// Header (offsets in bytes):
//   0  u32 magic       kMagic, the bytes "PSTR"
//   4  u16 version     kWireVersion
//   6  u16 type        MsgType
//   8  u32 flags       kFrameTagged or 0; unknown bits are refused
//  12  u64 body_len    bytes after the header, <= max_frame_bytes
//  20  u64 request_id  chosen by the requester, echoed in the reply
//
// Body:
//   u32 meta_len, meta (message fields and tensor descriptors, see
//   messages.h), then the raw tensor bytes of every descriptor in order.
//   body_len == 4 + meta_len + sum(desc.nbytes) exactly. A tagged frame
//   (push, push_pull and params only) sends each descriptor's bytes once, in
//   any order, after its u32 index among the meta's descriptors (tensors, then
//   rows): body_len == 4 + meta_len + sum(4 + desc.nbytes).

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "util/status.h"
#include "wire/message_table.h"

namespace pstrain::wire {

inline constexpr uint32_t kMagic = 0x52545350;  // "PSTR" in little-endian
// 6: get_module and module; 7: push_batch and batch_done (--placement
// server); 8: heartbeat carries the worker's progress (str json); 9: params
// in the step's order, snapshot's standby bit, the shared-memory handover's
// four doorbells; 10: tagged pushes and params (kFrameTagged); 11:
// step_record and snapshot's replay bit (replication after aggregation);
// 12: hello's claim, claimant and version (a standby claims a shard with
// the version of its copy).
inline constexpr uint16_t kWireVersion = 12;
inline constexpr size_t kFrameHeaderBytes = 28;
inline constexpr size_t kMetaLenBytes = 4;
/// Flag bit: the data section is tagged, each descriptor's bytes after its
/// u32 index, in whatever order the sender chose, so that a push can send
/// the gradient the next forward needs first, whenever backward makes it
/// (P3: Jayarajan et al., "Priority-based Parameter Propagation for
/// Distributed DNN Training", SysML 2019, section 3), and the server the
/// parameters it has stepped while others are still arriving. Push,
/// push_pull and params only.
inline constexpr uint32_t kFrameTagged = 1u << 0;
/// Bytes of a tag: the u32 index of the descriptor whose bytes follow.
inline constexpr size_t kTagBytes = 4;
/// Default cap on body_len: 4 GiB, so that one large embedding slice fits.
inline constexpr uint64_t kDefaultMaxFrameBytes = uint64_t{1} << 32;
/// Cap on meta_len (descriptors and cold-path JSON; never tensor data).
inline constexpr uint32_t kMaxMetaBytes = 64u << 20;

/// Message types, one per row of wire/message_table.h (values, names and
/// the meaning of each are there). Never renumber or reuse a value.
enum class MsgType : uint16_t {
#define PSTRAIN_WIRE_ENUM(value, Enum, name, Struct, Data) Enum = value,
  PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_ENUM)
#undef PSTRAIN_WIRE_ENUM
};

/// What follows a message's meta, by message type (the table's Data).
enum class DataSection : uint8_t {
  kNone,     // nothing: the data section is empty
  kTensors,  // the bytes of every tensor descriptor in the meta, in order
};

namespace internal {
constexpr uint16_t MaxOf(std::initializer_list<uint16_t> values) {
  uint16_t max = 0;
  for (uint16_t v : values) {
    if (v > max)
      max = v;
  }
  return max;
}
}  // namespace internal

/// The largest MsgType value.
inline constexpr uint16_t kMaxMsgType = internal::MaxOf({
#define PSTRAIN_WIRE_VALUE(value, Enum, name, Struct, Data) value,
    PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_VALUE)
#undef PSTRAIN_WIRE_VALUE
});

/// Whether `value` is a MsgType of this build.
bool IsMsgType(uint16_t value);
/// "hello", "push_pull", ...; "unknown" for values outside MsgType.
const char* MsgTypeName(MsgType type);
/// What follows the meta of a `type` frame. REQUIRES: IsMsgType(type).
DataSection DataSectionOf(MsgType type);

struct FrameHeader {
  uint16_t version = kWireVersion;
  MsgType type = MsgType::kAck;
  uint32_t flags = 0;
  uint64_t body_len = 0;
  uint64_t request_id = 0;
};

/// Writes the 28 header bytes (magic included) to `out`.
/// REQUIRES: out has room for kFrameHeaderBytes.
void EncodeFrameHeader(const FrameHeader& header, char* out);

/// Decodes and checks the 28 bytes at `in`. Returns kCorruption naming the
/// field and the expected value for a wrong magic, an unknown type, unknown
/// flag bits or body_len < 4 or > max_frame_bytes; kIncompatible with both
/// version numbers for another protocol version.
Status DecodeFrameHeader(const char* in, uint64_t max_frame_bytes,
                         FrameHeader* out);

/// Little-endian fixed-width coding, field by field (never memcpy a struct).
void EncodeFixed16(char* out, uint16_t v);
void EncodeFixed32(char* out, uint32_t v);
void EncodeFixed64(char* out, uint64_t v);
uint16_t DecodeFixed16(const char* in);
uint32_t DecodeFixed32(const char* in);
uint64_t DecodeFixed64(const char* in);

}  // namespace pstrain::wire
