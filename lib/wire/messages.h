#pragma once
// Message structs and the one Encode/Decode pair of each. These code only a
// frame's meta section (see frame.h for the frame, tensor_desc.h for the
// descriptors); tensor bytes travel in the data section and are never copied
// here. Decode checks every bound and returns kCorruption naming the message
// and field; it never crashes and never reads past its input. Thread-compatible.
//
// Meta layouts (little-endian; str = u32 length + bytes):
//   kHello     u8 role, u32 rank, u32 world_size
//   kError     u16 code (StatusCode), str message
//   kGetJob    (empty)
//   kJobSpec   str json
//   kRegister  u32 count, count x { str name, u8 dtype, u8 ndim, i64 dims[ndim] }
//   kAck       (empty)
//   kPull      u64 min_version
//   kPushPull  u64 version, u32 count, count x TensorDesc
//   kParams    u64 version, u32 count, count x TensorDesc,
//              u32 members, members x u32 worker index, u8 flags
//   kDone      str json
//   kPush      u64 version, u32 count, count x TensorDesc
//   kAuthHello str nonce (32 bytes)
//   kChallenge str nonce (32 bytes), str proof (32 bytes)
//   kAuth      str proof (32 bytes)
//   kServerInfo str address
//   kShard     u64 version, u32 count, count x TensorDesc
//   kHeartbeat (empty)
//   kSnapshot  u64 min_version, u8 flags

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "wire/frame.h"
#include "wire/tensor_desc.h"

namespace pstrain::wire {

/// What a peer is. Explicit values; never renumber.
enum class Role : uint8_t { kServer = 1, kWorker = 2, kTool = 3 };
const char* RoleName(Role role);  // "server", "worker", "tool"

/// Largest count of descriptors or keys one message may carry.
inline constexpr uint32_t kMaxTensorsPerMessage = 1u << 20;
/// Largest string (names, JSON, error text) one message may carry, in bytes.
inline constexpr uint32_t kMaxStringBytes = 16u << 20;

struct Hello {
  Role role = Role::kWorker;
  uint32_t rank = 0;
  uint32_t world_size = 0;
};

struct ErrorMsg {
  StatusCode code = StatusCode::kInvalidArgument;
  std::string message;  // one line
};

struct GetJob {};

struct JobSpecMsg {
  std::string json;  // the job spec, see ps/job_spec.h
};

/// One key of a model fingerprint: a parameter's name, dtype and shape.
struct KeySpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // at most kMaxTensorRank dims, each >= 0
  bool operator==(const KeySpec& o) const {
    return name == o.name && dtype == o.dtype && shape == o.shape;
  }
  bool operator!=(const KeySpec& o) const { return !(*this == o); }
};

struct Register {
  std::vector<KeySpec> keys;  // in named_parameters() order; key = index
};

struct Ack {};

struct Pull {
  uint64_t min_version = 0;  // reply once the server's version >= this
};

/// Gradients computed on parameters of `version`; data: one tensor per desc.
struct PushPull {
  uint64_t version = 0;
  std::vector<TensorDesc> grads;
};

/// Gradients computed on parameters of `version`, acknowledged without
/// parameters (a later Pull fetches them); data: one tensor per desc.
struct Push {
  uint64_t version = 0;
  std::vector<TensorDesc> grads;
};

/// Parameters of `version`; data: one tensor per desc.
struct Params {
  uint64_t version = 0;
  std::vector<TensorDesc> params;
  /// Sync with --reassign_shards, once a worker was lost: the worker
  /// indices (rank - num_servers, ascending) that compute step `version`,
  /// sharing the global batch. Empty: every worker, each its own slice.
  std::vector<uint32_t> members;
  /// The job stops here (--target_accuracy reached): the worker finishes
  /// the exchange under way, sends done and ends. Flag bit kParamsStop.
  bool stop = false;
};

/// Params flag bits.
inline constexpr uint8_t kParamsStop = 1;

struct Done {
  std::string json;  // the worker's stats, see report/
};

/// Bytes of every auth nonce and proof (an HMAC-SHA256; see net/auth.h).
inline constexpr uint32_t kAuthBytes = 32;

/// Opens an authenticated connection: the client's random challenge.
struct AuthHello {
  std::string nonce;  // kAuthBytes random bytes
};

/// The server's answer to AuthHello: its own random challenge, and its proof
/// that it knows the token (HMAC over the client's nonce).
struct Challenge {
  std::string nonce;  // kAuthBytes random bytes
  std::string proof;  // kAuthBytes
};

/// The client's proof that it knows the token (HMAC over both nonces).
struct Auth {
  std::string proof;  // kAuthBytes
};

/// A worker busy computing is alive (Service: --dead_after).
struct Heartbeat {};

/// Server s > 0 tells the master where workers reach it.
struct ServerInfo {
  std::string address;  // "host:port"
};

/// A server's parameter slices (ps/shard_plan.h order) at `version`: server
/// s > 0's final ones, sent to the master for the merged checkpoint, and the
/// reply to a Snapshot, whose last tensor is then, when asked for, the
/// server's optimizer state (uint8 [n], libtorch's archive bytes); data: one
/// tensor per desc.
struct Shard {
  uint64_t version = 0;
  std::vector<TensorDesc> params;
};

/// The master's observer (a tool) asks a server for its slices at the first
/// version >= min_version that it makes, or at once when it is past it;
/// reply: Shard.
struct Snapshot {
  uint64_t min_version = 0;
  /// Also the server's optimizer state at that version (flag bit
  /// kSnapshotOptimizerState), for a checkpoint.
  bool with_optimizer_state = false;
};

/// Snapshot flag bits.
inline constexpr uint8_t kSnapshotOptimizerState = 1;

// Encode* clears *meta and writes the message's meta bytes into it; reusing
// one string keeps its capacity, so steady-state encoding allocates nothing.
// REQUIRES (PS_CHECK): strings <= kMaxStringBytes, at most
// kMaxTensorsPerMessage keys or descriptors, shapes of rank <= kMaxTensorRank.
// Decode* parses exactly `meta` (trailing bytes are kCorruption). For vectors
// in the output, capacity is reused. On error the output is unspecified.
void EncodeMeta(const Hello& m, std::string* meta);
void EncodeMeta(const ErrorMsg& m, std::string* meta);
void EncodeMeta(const GetJob& m, std::string* meta);
void EncodeMeta(const JobSpecMsg& m, std::string* meta);
void EncodeMeta(const Register& m, std::string* meta);
void EncodeMeta(const Ack& m, std::string* meta);
void EncodeMeta(const Pull& m, std::string* meta);
void EncodeMeta(const PushPull& m, std::string* meta);
void EncodeMeta(const Params& m, std::string* meta);
void EncodeMeta(const Done& m, std::string* meta);
void EncodeMeta(const Push& m, std::string* meta);
void EncodeMeta(const AuthHello& m, std::string* meta);
void EncodeMeta(const Challenge& m, std::string* meta);
void EncodeMeta(const Auth& m, std::string* meta);
void EncodeMeta(const ServerInfo& m, std::string* meta);
void EncodeMeta(const Shard& m, std::string* meta);
void EncodeMeta(const Heartbeat& m, std::string* meta);
void EncodeMeta(const Snapshot& m, std::string* meta);

Status DecodeMeta(std::string_view meta, Hello* out);
Status DecodeMeta(std::string_view meta, ErrorMsg* out);
Status DecodeMeta(std::string_view meta, GetJob* out);
Status DecodeMeta(std::string_view meta, JobSpecMsg* out);
Status DecodeMeta(std::string_view meta, Register* out);
Status DecodeMeta(std::string_view meta, Ack* out);
Status DecodeMeta(std::string_view meta, Pull* out);
Status DecodeMeta(std::string_view meta, PushPull* out);
Status DecodeMeta(std::string_view meta, Params* out);
Status DecodeMeta(std::string_view meta, Done* out);
Status DecodeMeta(std::string_view meta, Push* out);
/// The auth messages also refuse a nonce or proof of other than kAuthBytes.
Status DecodeMeta(std::string_view meta, AuthHello* out);
Status DecodeMeta(std::string_view meta, Challenge* out);
Status DecodeMeta(std::string_view meta, Auth* out);
Status DecodeMeta(std::string_view meta, ServerInfo* out);
Status DecodeMeta(std::string_view meta, Shard* out);
Status DecodeMeta(std::string_view meta, Heartbeat* out);
Status DecodeMeta(std::string_view meta, Snapshot* out);

/// The MsgType each struct travels as.
MsgType TypeOf(const Hello&);
MsgType TypeOf(const ErrorMsg&);
MsgType TypeOf(const GetJob&);
MsgType TypeOf(const JobSpecMsg&);
MsgType TypeOf(const Register&);
MsgType TypeOf(const Ack&);
MsgType TypeOf(const Pull&);
MsgType TypeOf(const PushPull&);
MsgType TypeOf(const Params&);
MsgType TypeOf(const Done&);
MsgType TypeOf(const Push&);
MsgType TypeOf(const AuthHello&);
MsgType TypeOf(const Challenge&);
MsgType TypeOf(const Auth&);
MsgType TypeOf(const ServerInfo&);
MsgType TypeOf(const Shard&);
MsgType TypeOf(const Heartbeat&);
MsgType TypeOf(const Snapshot&);

/// Sum of descs' nbytes in bytes; kCorruption if it overflows uint64.
Status DataBytes(const std::vector<TensorDesc>& descs, uint64_t* total);

/// Writes header, u32 meta_len and meta into *out (cleared first), ready to
/// be followed on the socket by `data_bytes` of tensor data.
/// REQUIRES: meta.size() <= kMaxMetaBytes.
void EncodeFramePrefix(MsgType type, uint64_t request_id, std::string_view meta,
                       uint64_t data_bytes, std::string* out);

/// Checks that a header's body_len equals 4 + meta_len + data_bytes and that
/// meta_len <= kMaxMetaBytes; kCorruption naming both numbers otherwise.
Status CheckBodyLength(const FrameHeader& header, uint64_t meta_len,
                       uint64_t data_bytes);

/// Decodes `meta` as the message `header.type` says and checks that the data
/// section is exactly as long as its descriptors say. For the fuzzer, tests
/// and logs: the hot path decodes into its own reused structs instead.
Status ValidateFrame(const FrameHeader& header, std::string_view meta,
                     uint64_t data_bytes);

}  // namespace pstrain::wire
