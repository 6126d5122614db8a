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
//   8  u32 flags       0; unknown bits are refused
//  12  u64 body_len    bytes after the header, <= max_frame_bytes
//  20  u64 request_id  chosen by the requester, echoed in the reply
//
// Body:
//   u32 meta_len, meta (message fields and tensor descriptors, see
//   messages.h), then the raw tensor bytes of every descriptor in order.
//   body_len == 4 + meta_len + sum(desc.nbytes) exactly.

#include <cstddef>
#include <cstdint>

#include "util/status.h"

namespace pstrain::wire {

inline constexpr uint32_t kMagic = 0x52545350;  // "PSTR" in little-endian
inline constexpr uint16_t kWireVersion = 3;  // 3: snapshot, params flags
inline constexpr size_t kFrameHeaderBytes = 28;
inline constexpr size_t kMetaLenBytes = 4;
/// Default cap on body_len: 4 GiB, so that one large embedding slice fits.
inline constexpr uint64_t kDefaultMaxFrameBytes = uint64_t{1} << 32;
/// Cap on meta_len (descriptors and cold-path JSON; never tensor data).
inline constexpr uint32_t kMaxMetaBytes = 64u << 20;

/// Message types. Explicit values: never renumber or reuse one; retire a
/// value with a comment ("// 9 was kFoo").
enum class MsgType : uint16_t {
  kHello = 1,     // both ways, first frame: role, rank, world_size
  kError = 2,     // reply: why a request was refused
  kGetJob = 3,    // worker -> server: ask for the job spec
  kJobSpec = 4,   // server -> worker: job spec as JSON
  kRegister = 5,  // worker -> server: the worker's model fingerprint
  kAck = 6,       // reply with no content
  kPull = 7,      // worker -> server: ask for the current parameters
  kPushPull = 8,  // worker -> server: gradients; reply kParams
  kParams = 9,    // server -> worker: parameters of a version
  kDone = 10,     // worker -> server: finished, with its stats as JSON
  kPush = 11,     // worker -> server: gradients; reply kAck (pull separately)
  kAuthHello = 12,  // client -> server, first frame under a token: its nonce
  kChallenge = 13,  // server -> client: its nonce and its proof of the token
  kAuth = 14,       // client -> server: its proof of the token; reply kAck
  kServerInfo = 15,  // server s > 0 -> master: where it listens; reply kAck
  kShard = 16,       // server s > 0 -> master, at the end: its slices; reply kAck
  kHeartbeat = 17,   // worker -> server while it computes; no reply
  kSnapshot = 18,    // master's observer -> server: slices at a version; reply kShard
};
inline constexpr uint16_t kMaxMsgType = 18;

/// "hello", "push_pull", ...; "unknown" for values outside MsgType.
const char* MsgTypeName(MsgType type);

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
