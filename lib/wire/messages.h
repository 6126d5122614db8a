#pragma once
// Message structs and the one Encode/Decode pair of each. These code only a
// frame's meta section (see frame.h for the frame, tensor_desc.h for the
// descriptors); tensor bytes travel in the data section and are never copied
// here. Decode checks every bound and returns kCorruption naming the message
// and field; it never crashes and never reads past its input.
// Thread-compatible.
//
// Each struct's comment gives its meta layout (little-endian; str = u32
// length + bytes); share/doc/wire-format.md has the same, with the checks.
// The list of messages itself is wire/message_table.h.

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

/// What a hello as server `rank` claims: nothing (the server itself), or,
/// from a standby of that rank's shard whose primary is gone, the shard,
/// with or without a copy of it (ps/rank/standby.h). Explicit values.
enum class Claim : uint8_t { kNone = 0, kNoCopy = 1, kCopy = 2 };

/// The first frame each way. Meta: u8 role, u32 rank, u32 world_size,
/// u8 claim, u32 claimant, u64 version. A claim other than kNone comes
/// only with role server.
struct Hello {
  Role role = Role::kWorker;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  Claim claim = Claim::kNone;
  uint32_t claimant = 0;  // a claim's: the standby's own server rank
  uint64_t version = 0;   // a claim's: the version its copy holds
};

/// Why a request was refused. Meta: u16 code (StatusCode, not kOk),
/// str message.
struct ErrorMsg {
  StatusCode code = StatusCode::kInvalidArgument;
  std::string message;  // one line
};

/// Asks for the job spec. Meta: empty.
struct GetJob {};

/// Meta: str json.
struct JobSpecMsg {
  std::string json;  // the job spec, see ps/job/job_spec.h
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

/// A worker's model fingerprint. Meta: u32 count, count x { str name,
/// u8 dtype, u8 ndim, i64 dims[ndim] }.
struct Register {
  std::vector<KeySpec> keys;  // parameters and buffers, state_dict order
};

/// A reply with no content. Meta: empty.
struct Ack {};

/// Meta: u64 min_version.
struct Pull {
  uint64_t min_version = 0;  // reply once the server's version >= this
};

/// Largest count of row ids in one SparseRows or RowRequest.
inline constexpr uint32_t kMaxRowIds = 1u << 22;

/// Some rows of a row-sparse key (an embedding table [rows, row_dim]): a
/// descriptor of the rows, whose data travels in the data section like any
/// tensor's, and their row ids. Meta: TensorDesc (ndim 2, dims
/// [n, row_dim]), then n x i64 ids. The ids are checked as they are decoded:
/// each >= 0 and strictly above the one before it (so unique); whether they
/// are below the table's row count is the receiver's check (ps/). The rows
/// may be coded (fp16, bf16: one record of n x row_dim elements, nbytes
/// 2 x numel) as the job's rule says (ps/job/compression_spec.h); the receiver
/// checks the codec and the record (wire/compression.h).
struct SparseRows {
  TensorDesc rows;           // ndim 2: [ids.size(), row_dim]
  std::vector<int64_t> ids;  // strictly ascending, >= 0
};

/// The rows of a row-sparse key a worker wants in the reply to its push:
/// those its next batch looks up. Meta: u32 key, u32 n, n x i64 ids, the
/// ids checked as SparseRows' are.
struct RowRequest {
  uint32_t key = 0;
  std::vector<int64_t> ids;  // strictly ascending, >= 0
};

/// Gradients computed on parameters of `version`; data: one tensor per desc,
/// then the rows of each SparseRows, in order. Meta: u64 version, u32 count,
/// count x TensorDesc, u32 sparse, sparse x SparseRows, u32 requests,
/// requests x RowRequest. PushPull (reply: Params) and Push (reply: Ack, a
/// later Pull fetches the parameters) share this layout and its codec; a
/// Push carries no requests (a Pull returns whole tensors).
template <MsgType kType>
struct GradientsMsg {
  uint64_t version = 0;
  std::vector<TensorDesc> grads;
  /// Row-sparse keys: the rows the batch touched, each row the sum of the
  /// gradients of its id's occurrences. Not in `grads` too.
  std::vector<SparseRows> rows{};
  /// Push_pull: per row-sparse key, the rows to send back in Params::rows.
  std::vector<RowRequest> requests{};
};
using PushPull = GradientsMsg<MsgType::kPushPull>;
using Push = GradientsMsg<MsgType::kPush>;

/// Parameters of `version`; data: one tensor per desc, then the rows of each
/// SparseRows, in order. Meta: u64 version, u32 count, count x TensorDesc,
/// u32 sparse, sparse x SparseRows, u32 members, members x u32, u8 flags.
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
  /// The reply to a push_pull with requests: of each row-sparse key, the
  /// rows requested (and the key is not in `params`). Empty otherwise.
  std::vector<SparseRows> rows{};
};

/// Params flag bits.
inline constexpr uint8_t kParamsStop = 1;

/// A worker has finished. Meta: str json.
struct Done {
  std::string json;  // the worker's stats, see report/
};

/// Bytes of every auth nonce and proof (an HMAC-SHA256; see net/auth.h).
inline constexpr uint32_t kAuthBytes = 32;

/// Opens an authenticated connection: the client's random challenge.
/// Meta: str nonce.
struct AuthHello {
  std::string nonce;  // kAuthBytes random bytes
};

/// The server's answer to AuthHello: its own random challenge, and its proof
/// that it knows the token (HMAC over the client's nonce). Meta: str nonce,
/// str proof.
struct Challenge {
  std::string nonce;  // kAuthBytes random bytes
  std::string proof;  // kAuthBytes
};

/// The client's proof that it knows the token (HMAC over both nonces).
/// Meta: str proof.
struct Auth {
  std::string proof;  // kAuthBytes
};

/// A worker busy computing is alive (the Engine: --dead_after), and how far
/// it got. Meta: str json. The meta is always the str: an empty meta is
/// refused like any short one, and "no progress" is a json of length 0.
struct Heartbeat {
  /// The worker's running progress, a compact JSON object
  /// (worker/progress_board.h), or "" (none: what servers other than rank 0
  /// get). Not parsed by the wire layer, nor by the Engine.
  std::string json;
};

/// A worker asks a server to move their connection onto shared memory
/// (net/shm_handover.h). Meta: str host (net::HostIdentity()).
struct ShmOffer {
  std::string host;
};

/// The server's answer to a ShmOffer. Meta: str socket_name, str cookie,
/// str refusal. Either the handover socket's abstract name and a one-time
/// cookie (kShmCookieChars hex digits) with an empty refusal, or empty
/// ones and why the connection stays on TCP.
struct ShmTicket {
  std::string socket_name;
  std::string cookie;
  std::string refusal;
};

/// Characters of a ShmTicket's cookie: 32 lowercase hex digits.
inline constexpr uint32_t kShmCookieChars = 32;

/// Server s > 0 tells the master where workers reach it. Meta: str address.
struct ServerInfo {
  std::string address;  // "host:port"
};

/// A server's parameter slices (ps/job/shard_plan.h order) at `version`: server
/// s > 0's final ones, sent to the master for the merged checkpoint, and the
/// reply to a Snapshot, whose last tensor is then, when asked for, the
/// server's optimizer state (uint8 [n], libtorch's archive bytes); data: one
/// tensor per desc. Meta: u64 version, u32 count, count x TensorDesc.
struct Shard {
  uint64_t version = 0;
  std::vector<TensorDesc> params;
};

/// The step that made `version`, for a standby that holds version - 1 to
/// replay (Li et al., OSDI 2014, section 4.3: replication after
/// aggregation): the reply to a Snapshot with the replay flag when the
/// server has that step's record. Data, one tensor per desc: for each key
/// of the shard in order, a trained key's gradient as the optimizer stepped
/// with it (averaged, corrected and clipped), a buffer's values after the
/// step; then the step's learning rate (float64 [1] as 8 bytes); then the
/// applied pushes by worker (int64, as a standby Shard's). Meta: u64
/// version, u32 count, count x TensorDesc.
struct StepRecord {
  uint64_t version = 0;
  std::vector<TensorDesc> params;
};

/// The master's observer (a tool) asks a server for its slices at the first
/// version >= min_version that it makes, or at once when it is past it;
/// reply: Shard (or StepRecord, see replay). Meta: u64 min_version, u8
/// flags.
struct Snapshot {
  uint64_t min_version = 0;
  /// Also the server's optimizer state at that version (flag bit
  /// kSnapshotOptimizerState), for a checkpoint.
  bool with_optimizer_state = false;
  /// The asker is a standby of the server's shard (ps/rank/standby.h): asking
  /// for min_version says it holds min_version - 1, and the server answers
  /// workers with no version its standbys do not hold yet (flag bit
  /// kSnapshotStandby).
  bool standby = false;
  /// A standby that takes, instead of the whole shard, the record of the
  /// step that made min_version when the server has it (flag bit
  /// kSnapshotReplay; with standby only).
  bool replay = false;
};

/// Snapshot flag bits.
inline constexpr uint8_t kSnapshotOptimizerState = 1;
inline constexpr uint8_t kSnapshotStandby = 2;
inline constexpr uint8_t kSnapshotReplay = 4;

/// A worker or server asks rank 0 (the master) for the job's TorchScript
/// module (--model PATH) at the handshake; reply: ModuleMsg. Meta: empty.
struct GetModule {};

/// Characters of a ModuleMsg's sha256: 64 lowercase hex digits.
inline constexpr uint32_t kSha256HexChars = 64;

/// The job's TorchScript module: the bytes of its file (tens of MB, more
/// than kMaxStringBytes, so they travel in the data section, not in a str).
/// Meta: str sha256, TensorDesc bytes. Decode refuses a sha256 of other
/// than kSha256HexChars chars of [0-9a-f] (the length checked before
/// anything is read), and a descriptor other than key 0, codec raw, dtype
/// uint8, ndim 1, nbytes == dims[0]. REQUIRES (PS_CHECK, EncodeMeta): the
/// same of `sha256` and `bytes`. Whether the bytes hash to `sha256` is the
/// receiver's check, once it has read them.
struct ModuleMsg {
  std::string sha256;  // SHA-256 of the file's bytes, lowercase hex
  TensorDesc bytes;    // uint8 [n], raw: the n bytes of the file
};

/// Under --placement server the model lives on the server: a worker sends
/// it one batch, and the server runs forward, backward and the update on it;
/// reply: BatchDone. Data: x's bytes, then y's. Meta: u64 version,
/// TensorDesc x, TensorDesc y. Decode refuses x other than key 0 and y
/// other than key 1, a codec other than raw, x of a dtype other than
/// float32, y of one other than int64 or float32, ndim 0, dims[0] 0 (an
/// empty batch), and x and y of different dims[0] (samples).
/// REQUIRES (PS_CHECK, EncodeMeta): the same of `x` and `y`, and nbytes
/// numel x dtype size. Whether the shapes fit the model is the server's
/// check (ps/).
struct PushBatch {
  /// The server version the worker's last reply named: in sync, the step
  /// this batch is for.
  uint64_t version = 0;
  TensorDesc x;  // float32 [samples, ...], raw, key 0: the inputs
  TensorDesc y;  // int64 or float32 [samples, ...], raw, key 1: the targets
};

/// The server's reply to a PushBatch: the batch's step is in. Meta: u64
/// version, u64 loss (the IEEE-754 bits of the double), u8 flags. Any loss
/// is accepted, NaN included, and decodes to the same bits.
struct BatchDone {
  /// The server's version once this batch's step is applied: in sync, the
  /// next step.
  uint64_t version = 0;
  double loss = 0;  // the batch's mean loss
  /// The job stops here, as Params::stop (--target_accuracy reached): the
  /// worker sends done and ends. Flag bit kBatchDoneStop.
  bool stop = false;
};

/// BatchDone flag bits.
inline constexpr uint8_t kBatchDoneStop = 1;

// For every message of wire/message_table.h, generated from it:
//
//   constexpr MsgType TypeOf(const Struct&);
//     The MsgType the struct travels as.
//   void EncodeMeta(const Struct& m, std::string* meta);
//     Clears *meta and writes the message's meta bytes into it; reusing one
//     string keeps its capacity, so steady-state encoding allocates nothing.
//     REQUIRES (PS_CHECK): strings <= kMaxStringBytes, at most
//     kMaxTensorsPerMessage keys, descriptors or members, shapes of rank <=
//     kMaxTensorRank.
//   Status DecodeMeta(std::string_view meta, Struct* out);
//     Parses exactly `meta` (trailing bytes are kCorruption "<name>: N
//     trailing bytes"); every error is a one-line kCorruption that starts
//     with the message's name. For vectors and strings in the output,
//     capacity is reused. On error the output is unspecified. The auth
//     messages also refuse a nonce or proof of other than kAuthBytes.
#define PSTRAIN_WIRE_DECLARE(value, Enum, name, Struct, Data) \
  constexpr MsgType TypeOf(const Struct&) {                   \
    return MsgType::Enum;                                     \
  }                                                           \
  void EncodeMeta(const Struct& m, std::string* meta);        \
  Status DecodeMeta(std::string_view meta, Struct* out);
PSTRAIN_WIRE_MESSAGES(PSTRAIN_WIRE_DECLARE)
#undef PSTRAIN_WIRE_DECLARE

/// Sum of descs' nbytes in bytes; kCorruption if it overflows uint64.
Status DataBytes(const std::vector<TensorDesc>& descs, uint64_t* total);
/// DataBytes of `descs`, then of every rows' descriptor.
Status DataBytes(const std::vector<TensorDesc>& descs,
                 const std::vector<SparseRows>& rows, uint64_t* total);

/// Writes header (with `flags`), u32 meta_len and meta into *out (cleared
/// first), ready to be followed on the socket by `data_bytes` of tensor
/// data (tags included in a tagged frame).
/// REQUIRES: meta.size() <= kMaxMetaBytes.
void EncodeFramePrefix(MsgType type, uint64_t request_id, std::string_view meta,
                       uint64_t data_bytes, std::string* out,
                       uint32_t flags = 0);

/// Checks that a header's body_len equals 4 + meta_len + data_bytes and that
/// meta_len <= kMaxMetaBytes; kCorruption naming both numbers otherwise.
Status CheckBodyLength(const FrameHeader& header, uint64_t meta_len,
                       uint64_t data_bytes);

/// Checks body_len (CheckBodyLength), decodes `meta` as the message
/// `header.type` says, and checks that the data section is exactly as long
/// as its descriptors say (empty for DataSection::kNone; each descriptor's
/// bytes plus kTagBytes in a tagged push, push_pull or params, the only
/// messages that may be tagged: frame.h's kFrameTagged). Allocates nothing
/// for the hot-path messages (pull, push, push_pull, params, shard, ack,
/// heartbeat, push_batch, batch_done); returns kCorruption naming the
/// message and field. Every frame passes it before its data is read
/// (FrameParser); handlers then decode the meta into their own reused
/// structs.
Status ValidateFrame(const FrameHeader& header, std::string_view meta,
                     uint64_t data_bytes);

}  // namespace pstrain::wire
