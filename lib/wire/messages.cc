#include "wire/messages.h"

#include <array>
#include <limits>
#include <string>

#include "util/check.h"
#include "wire/meta_codec.h"

namespace pstrain::wire {
namespace {

using internal::MetaReader;
using internal::MetaWriter;

// Smallest encodings of one list item, so that a count the remaining bytes
// cannot hold is refused before anything is allocated for it.
constexpr size_t kMinDescBytes = 15;    // rank-0 TensorDesc
constexpr size_t kMinKeySpecBytes = 6;  // empty name, dtype, ndim
constexpr uint16_t kMaxErrorCode =
    static_cast<uint16_t>(StatusCode::kIncompatible);
constexpr uint8_t kMaxRole = static_cast<uint8_t>(Role::kTool);

template <typename M>
const char* NameOf(const M& m) {
  return MsgTypeName(TypeOf(m));
}

void EncodeDescs(uint64_t version, const std::vector<TensorDesc>& descs,
                 std::string* meta) {
  PS_CHECK(descs.size() <= kMaxTensorsPerMessage)
      << descs.size() << " tensors in one message";
  meta->clear();
  MetaWriter w(meta);
  w.U64(version);
  w.U32(static_cast<uint32_t>(descs.size()));
  for (const TensorDesc& d : descs)
    w.Desc(d);
}

// Reads "u64 version, u32 count, count x TensorDesc", handing each
// descriptor to sink(desc), which returns a Status; params then carry
// "u32 count, count x u32 member", each handed to members(worker), and
// "u8 flags" (kParamsStop), stored in *stop when given. Shared by the
// decoders (which store) and the validator (which only sums), so both
// check the same.
template <typename Sink, typename MemberSink>
Status ReadDescs(std::string_view meta, MsgType type, uint64_t* version,
                 Sink&& sink, MemberSink&& members, bool* stop = nullptr) {
  MetaReader r(meta, MsgTypeName(type));
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.U64("version", version));
  PS_RETURN_IF_ERROR(r.Count(kMinDescBytes, &count));
  TensorDesc desc;
  PS_RETURN_IF_ERROR(r.Items("tensor", count, [&](uint32_t) {
    PS_RETURN_IF_ERROR(r.Desc(&desc));
    return r.Wrap(sink(desc));
  }));
  if (type == MsgType::kParams) {
    PS_RETURN_IF_ERROR(r.Count(4, &count));
    PS_RETURN_IF_ERROR(r.Items("member", count, [&](uint32_t) {
      uint32_t worker = 0;
      PS_RETURN_IF_ERROR(r.U32("worker", &worker));
      members(worker);
      return Status::Ok();
    }));
    uint8_t flags = 0;
    PS_RETURN_IF_ERROR(r.U8("flags", &flags));
    if ((flags & ~kParamsStop) != 0) {
      return r.Error("flags " + std::to_string(flags) + " has unknown bits, expected 0 or " +
                     std::to_string(kParamsStop));
    }
    if (stop) *stop = (flags & kParamsStop) != 0;
  }
  return r.Finish();
}

template <typename Sink>
Status ReadDescs(std::string_view meta, MsgType type, uint64_t* version,
                 Sink&& sink) {
  return ReadDescs(meta, type, version, sink, [](uint32_t) {});
}

Status DecodeDescs(std::string_view meta, MsgType type, uint64_t* version,
                   std::vector<TensorDesc>* out) {
  out->clear();  // keeps capacity: steady state allocates nothing
  return ReadDescs(meta, type, version, [out](const TensorDesc& d) {
    out->push_back(d);
    return Status::Ok();
  });
}

Status DecodeString(std::string_view meta, MsgType type, const char* field,
                    std::string* out) {
  MetaReader r(meta, MsgTypeName(type));
  PS_RETURN_IF_ERROR(r.Str(field, out));
  return r.Finish();
}

Status DecodeEmpty(std::string_view meta, MsgType type) {
  return MetaReader(meta, MsgTypeName(type)).Finish();
}

Status ReadKeySpec(MetaReader* r, KeySpec* key) {
  uint8_t dtype = 0;
  uint8_t ndim = 0;
  std::array<int64_t, kMaxTensorRank> dims{};
  PS_RETURN_IF_ERROR(r->Str("name", &key->name));
  PS_RETURN_IF_ERROR(r->U8("dtype", &dtype));
  PS_RETURN_IF_ERROR(r->Wrap(internal::CheckDType(dtype)));
  PS_RETURN_IF_ERROR(r->U8("ndim", &ndim));
  PS_RETURN_IF_ERROR(r->Wrap(internal::CheckRank(ndim)));
  for (int i = 0; i < ndim; ++i) {
    PS_RETURN_IF_ERROR(r->I64("dims", &dims[i]));
  }
  PS_RETURN_IF_ERROR(r->Wrap(internal::CheckDims(dims.data(), ndim)));
  key->dtype = static_cast<DType>(dtype);
  key->shape.assign(dims.begin(), dims.begin() + ndim);
  return Status::Ok();
}

// The data section of a message with no tensors must be empty.
Status CheckNoData(MsgType type, uint64_t data_bytes) {
  if (data_bytes == 0)
    return Status::Ok();
  return Corruption(std::string(MsgTypeName(type)) + ": data section is " +
                    std::to_string(data_bytes) + " bytes, expected 0");
}

template <typename M>
Status ValidateNoData(std::string_view meta, uint64_t data_bytes) {
  M m;
  PS_RETURN_IF_ERROR(CheckNoData(TypeOf(m), data_bytes));
  return DecodeMeta(meta, &m);
}

// Walks the descriptors without storing them, so validating a hot-path
// frame allocates nothing.
Status ValidateDescs(std::string_view meta, MsgType type, uint64_t data_bytes) {
  uint64_t version = 0;
  uint64_t left = data_bytes;
  PS_RETURN_IF_ERROR(
      ReadDescs(meta, type, &version, [&left](const TensorDesc& d) {
        if (d.nbytes > left) {
          return Corruption("nbytes " + std::to_string(d.nbytes) +
                            " exceeds the " + std::to_string(left) +
                            " data bytes left");
        }
        left -= d.nbytes;
        return Status::Ok();
      }));
  if (left == 0)
    return Status::Ok();
  return Corruption(std::string(MsgTypeName(type)) + ": data section is " +
                    std::to_string(data_bytes) + " bytes, descriptors say " +
                    std::to_string(data_bytes - left));
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kServer:
      return "server";
    case Role::kWorker:
      return "worker";
    case Role::kTool:
      return "tool";
  }
  return "unknown";
}

MsgType TypeOf(const Hello&) {
  return MsgType::kHello;
}
MsgType TypeOf(const ErrorMsg&) {
  return MsgType::kError;
}
MsgType TypeOf(const GetJob&) {
  return MsgType::kGetJob;
}
MsgType TypeOf(const JobSpecMsg&) {
  return MsgType::kJobSpec;
}
MsgType TypeOf(const Register&) {
  return MsgType::kRegister;
}
MsgType TypeOf(const Ack&) {
  return MsgType::kAck;
}
MsgType TypeOf(const Pull&) {
  return MsgType::kPull;
}
MsgType TypeOf(const PushPull&) {
  return MsgType::kPushPull;
}
MsgType TypeOf(const Params&) {
  return MsgType::kParams;
}
MsgType TypeOf(const Done&) {
  return MsgType::kDone;
}
MsgType TypeOf(const Push&) {
  return MsgType::kPush;
}
MsgType TypeOf(const ServerInfo&) {
  return MsgType::kServerInfo;
}
MsgType TypeOf(const Shard&) {
  return MsgType::kShard;
}
MsgType TypeOf(const Heartbeat&) {
  return MsgType::kHeartbeat;
}
MsgType TypeOf(const Snapshot&) {
  return MsgType::kSnapshot;
}

void EncodeMeta(const Hello& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U8(static_cast<uint8_t>(m.role));
  w.U32(m.rank);
  w.U32(m.world_size);
}

void EncodeMeta(const ErrorMsg& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U16(static_cast<uint16_t>(m.code));
  w.Str(m.message);
}

void EncodeMeta(const GetJob&, std::string* meta) {
  meta->clear();
}

void EncodeMeta(const JobSpecMsg& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.json);
}

void EncodeMeta(const Register& m, std::string* meta) {
  PS_CHECK(m.keys.size() <= kMaxTensorsPerMessage)
      << m.keys.size() << " keys in one message";
  meta->clear();
  MetaWriter w(meta);
  w.U32(static_cast<uint32_t>(m.keys.size()));
  for (const KeySpec& k : m.keys) {
    PS_CHECK(k.shape.size() <= kMaxTensorRank)
        << k.name << " has rank " << k.shape.size();
    w.Str(k.name);
    w.U8(static_cast<uint8_t>(k.dtype));
    w.U8(static_cast<uint8_t>(k.shape.size()));
    for (int64_t d : k.shape)
      w.I64(d);
  }
}

void EncodeMeta(const Ack&, std::string* meta) {
  meta->clear();
}

void EncodeMeta(const Pull& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).U64(m.min_version);
}

void EncodeMeta(const PushPull& m, std::string* meta) {
  EncodeDescs(m.version, m.grads, meta);
}

void EncodeMeta(const Push& m, std::string* meta) {
  EncodeDescs(m.version, m.grads, meta);
}

void EncodeMeta(const Params& m, std::string* meta) {
  PS_CHECK(m.members.size() <= kMaxTensorsPerMessage)
      << m.members.size() << " members in one message";
  EncodeDescs(m.version, m.params, meta);
  MetaWriter w(meta);
  w.U32(static_cast<uint32_t>(m.members.size()));
  for (uint32_t worker : m.members) w.U32(worker);
  w.U8(m.stop ? kParamsStop : 0);
}

void EncodeMeta(const Done& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.json);
}

void EncodeMeta(const ServerInfo& m, std::string* meta) {
  meta->clear();
  MetaWriter(meta).Str(m.address);
}

void EncodeMeta(const Shard& m, std::string* meta) {
  EncodeDescs(m.version, m.params, meta);
}

void EncodeMeta(const Heartbeat&, std::string* meta) {
  meta->clear();
}

void EncodeMeta(const Snapshot& m, std::string* meta) {
  meta->clear();
  MetaWriter w(meta);
  w.U64(m.min_version);
  w.U8(m.with_optimizer_state ? kSnapshotOptimizerState : 0);
}

Status DecodeMeta(std::string_view meta, Hello* out) {
  MetaReader r(meta, NameOf(*out));
  uint8_t role = 0;
  PS_RETURN_IF_ERROR(r.U8("role", &role));
  if (role < 1 || role > kMaxRole) {
    return r.Error("role " + std::to_string(role) +
                   " is unknown, expected 1.." + std::to_string(kMaxRole));
  }
  PS_RETURN_IF_ERROR(r.U32("rank", &out->rank));
  PS_RETURN_IF_ERROR(r.U32("world_size", &out->world_size));
  out->role = static_cast<Role>(role);
  return r.Finish();
}

Status DecodeMeta(std::string_view meta, ErrorMsg* out) {
  MetaReader r(meta, NameOf(*out));
  uint16_t code = 0;
  PS_RETURN_IF_ERROR(r.U16("code", &code));
  if (code < 1 || code > kMaxErrorCode) {  // kOk is not an error
    return r.Error("code " + std::to_string(code) +
                   " is unknown, expected 1.." + std::to_string(kMaxErrorCode));
  }
  PS_RETURN_IF_ERROR(r.Str("message", &out->message));
  out->code = static_cast<StatusCode>(code);
  return r.Finish();
}

Status DecodeMeta(std::string_view meta, GetJob* out) {
  return DecodeEmpty(meta, TypeOf(*out));
}

Status DecodeMeta(std::string_view meta, JobSpecMsg* out) {
  return DecodeString(meta, TypeOf(*out), "json", &out->json);
}

Status DecodeMeta(std::string_view meta, Register* out) {
  MetaReader r(meta, NameOf(*out));
  uint32_t count = 0;
  PS_RETURN_IF_ERROR(r.Count(kMinKeySpecBytes, &count));
  std::vector<KeySpec>& keys = out->keys;
  // Decode into the elements already there, so their strings and shapes
  // keep their capacity; only new elements are constructed.
  PS_RETURN_IF_ERROR(r.Items("key", count, [&](uint32_t i) {
    if (i == keys.size())
      keys.emplace_back();
    return ReadKeySpec(&r, &keys[i]);
  }));
  keys.resize(count);
  return r.Finish();
}

Status DecodeMeta(std::string_view meta, Ack* out) {
  return DecodeEmpty(meta, TypeOf(*out));
}

Status DecodeMeta(std::string_view meta, Pull* out) {
  MetaReader r(meta, NameOf(*out));
  PS_RETURN_IF_ERROR(r.U64("min_version", &out->min_version));
  return r.Finish();
}

Status DecodeMeta(std::string_view meta, PushPull* out) {
  return DecodeDescs(meta, TypeOf(*out), &out->version, &out->grads);
}

Status DecodeMeta(std::string_view meta, Push* out) {
  return DecodeDescs(meta, TypeOf(*out), &out->version, &out->grads);
}

Status DecodeMeta(std::string_view meta, Params* out) {
  out->params.clear();  // both keep capacity: steady state allocates nothing
  out->members.clear();
  return ReadDescs(
      meta, TypeOf(*out), &out->version,
      [out](const TensorDesc& d) {
        out->params.push_back(d);
        return Status::Ok();
      },
      [out](uint32_t worker) { out->members.push_back(worker); }, &out->stop);
}

Status DecodeMeta(std::string_view meta, Done* out) {
  return DecodeString(meta, TypeOf(*out), "json", &out->json);
}

Status DecodeMeta(std::string_view meta, ServerInfo* out) {
  return DecodeString(meta, TypeOf(*out), "address", &out->address);
}

Status DecodeMeta(std::string_view meta, Shard* out) {
  return DecodeDescs(meta, TypeOf(*out), &out->version, &out->params);
}

Status DecodeMeta(std::string_view meta, Heartbeat* out) {
  return DecodeEmpty(meta, TypeOf(*out));
}

Status DecodeMeta(std::string_view meta, Snapshot* out) {
  MetaReader r(meta, NameOf(*out));
  uint8_t flags = 0;
  PS_RETURN_IF_ERROR(r.U64("min_version", &out->min_version));
  PS_RETURN_IF_ERROR(r.U8("flags", &flags));
  if ((flags & ~kSnapshotOptimizerState) != 0) {
    return r.Error("flags " + std::to_string(flags) + " has unknown bits, expected 0 or " +
                   std::to_string(kSnapshotOptimizerState));
  }
  out->with_optimizer_state = (flags & kSnapshotOptimizerState) != 0;
  return r.Finish();
}

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

void EncodeFramePrefix(MsgType type, uint64_t request_id, std::string_view meta,
                       uint64_t data_bytes, std::string* out) {
  PS_CHECK(meta.size() <= kMaxMetaBytes)
      << "meta of " << meta.size() << " bytes";
  PS_CHECK(data_bytes <=
           std::numeric_limits<uint64_t>::max() - kMetaLenBytes - meta.size())
      << "body_len overflows u64";
  FrameHeader header;
  header.type = type;
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
  switch (header.type) {
    case MsgType::kHello:
      return ValidateNoData<Hello>(meta, data_bytes);
    case MsgType::kError:
      return ValidateNoData<ErrorMsg>(meta, data_bytes);
    case MsgType::kGetJob:
      return ValidateNoData<GetJob>(meta, data_bytes);
    case MsgType::kJobSpec:
      return ValidateNoData<JobSpecMsg>(meta, data_bytes);
    case MsgType::kRegister:
      return ValidateNoData<Register>(meta, data_bytes);
    case MsgType::kAck:
      return ValidateNoData<Ack>(meta, data_bytes);
    case MsgType::kPull:
      return ValidateNoData<Pull>(meta, data_bytes);
    case MsgType::kPushPull:
    case MsgType::kPush:
    case MsgType::kParams:
    case MsgType::kShard:
      return ValidateDescs(meta, header.type, data_bytes);
    case MsgType::kDone:
      return ValidateNoData<Done>(meta, data_bytes);
    case MsgType::kAuthHello:
      return ValidateNoData<AuthHello>(meta, data_bytes);
    case MsgType::kChallenge:
      return ValidateNoData<Challenge>(meta, data_bytes);
    case MsgType::kAuth:
      return ValidateNoData<Auth>(meta, data_bytes);
    case MsgType::kServerInfo:
      return ValidateNoData<ServerInfo>(meta, data_bytes);
    case MsgType::kHeartbeat:
      return ValidateNoData<Heartbeat>(meta, data_bytes);
    case MsgType::kSnapshot:
      return ValidateNoData<Snapshot>(meta, data_bytes);
  }
  return Corruption("frame header: type " +
                    std::to_string(static_cast<uint16_t>(header.type)) +
                    " is unknown, expected 1.." + std::to_string(kMaxMsgType));
}

}  // namespace pstrain::wire
